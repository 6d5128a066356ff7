"""The YOLOX family (n/t/s/m/l/x): blocks, model, checkpoints, predict path, SimOTA loss and
training step (libreyolo 1.6.0's network and training)."""
