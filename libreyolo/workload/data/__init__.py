"""YOLO-format datasets: YAML, labels, the synthetic set, augmentation and the loader."""
