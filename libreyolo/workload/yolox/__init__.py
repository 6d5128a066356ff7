"""The YOLOX family (n/t/s/m/l/x): blocks, model and checkpoints (libreyolo 1.6.0's network)."""
