"""Chrome trace reduction: the only package that knows Kineto event names. No torch/numpy."""
