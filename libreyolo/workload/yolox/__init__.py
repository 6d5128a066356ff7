"""YOLOX: the model, its loss, preprocessing and training step (libreyolo 1.6.0's behaviour)."""
