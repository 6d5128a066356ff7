"""Chrome trace reduction: the only package that knows Kineto event names. No torch/numpy."""

from libreyolo.kineto.reduce import analyse_trace

__all__ = ["analyse_trace"]
