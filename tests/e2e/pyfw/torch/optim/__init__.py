from .optimizer import Optimizer  # noqa: F401


class SGD(Optimizer):
    def _update(self):
        pass


class Adam(Optimizer):
    def _update(self):
        pass
