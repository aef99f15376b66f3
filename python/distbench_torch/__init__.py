"""distbench as a torch.distributed backend.

    import distbench_torch  # registers backend "distbench"
    dist.init_process_group("distbench")  # under torchrun

The strategy (ring, tree, ps, ...), its options, transport and link come
from DISTBENCH_STRATEGY, DISTBENCH_OPTIONS, DISTBENCH_TRANSPORT and
DISTBENCH_LINK, or from pg_options=distbench_torch.Options(...). With
DISTBENCH_OUT=DIR, rank 0 records every operation in DIR/results.jsonl for
`distbench report DIR`; distbench_torch.step(n) labels the operations of
training step n. The library is bin/libdistbench.so (make capi) or
DISTBENCH_LIB. See docs/guide/pytorch.md.
"""

from .backend import Options, register, world
from .core import Communicator

__all__ = ["Communicator", "Options", "register", "step", "world"]

_step = 0


def step(n=None):
    """Labels the operations issued from now on as training step n (the
    next step when n is None), for DISTBENCH_OUT's records. Call it once a
    step, after the optimizer's."""
    global _step
    _step = _step + 1 if n is None else int(n)
    w = world()
    if w is not None:
        w.step(_step)


register()
