"""The YOLOv9 family (t/s/m/c): blocks, model, checkpoints, loss and the predict path."""
