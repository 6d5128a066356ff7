"""What is measured: the YOLOv9 model family, its data and its training/inference steps (torch)."""
