"""Results where teams look: a profile or a sweep folder logged to MLflow and TensorBoard.

Role: `log.log_source` reads what is on disk (`source.py`) and hands the same runs to the
MLflow sink (`mlflow_sink.py`) and the TensorBoard sink (`tensorboard_sink.py`); both
`libreyolo profile log` and the sweep's `hydra/callbacks=mlflow|tensorboard` call it.

Must not: import torch, numpy, Hydra or OmegaConf (the `log` command is a reader), import
MLflow or TensorBoard but inside the sink that needs it, print, or exit.
"""
