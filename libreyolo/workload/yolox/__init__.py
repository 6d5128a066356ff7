"""The YOLOX family (n/t/s/m/l/x): model, checkpoints, SimOTA loss and the predict path."""
