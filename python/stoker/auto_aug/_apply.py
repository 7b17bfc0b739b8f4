"""The two paths shared by rand_augment, trivial_augment and auto_augment.

Both start from one ``auto_augment.choose`` node (the per-sample decisions):
 - fused: lists made only of stoker's built-in augmentations (as the suites configure
   them) run as one ``auto_augment.apply`` operator fed those decisions;
 - generic: any list (custom augmentations included) runs stage by stage, each
   augmentation under a conditional guard (``index == k``: it runs only for its samples)
   with its parameter looked up per bin and sign (``auto_augment.stage_param``), merged
   per sample by ``select``; on GPU data the guarded operators run on the GPU (built-in
   members through ``auto_augment.augment``'s GPU backend) and the select merges there.
The decisions node is named after the call's position in the pipeline (or seeded by
``seed``), so both paths draw the same decisions and give the same bytes.
"""

import itertools

import numpy as np

from .. import fn
from .. import _graph
from .._graph import DataNode
from .core._args import MissingArgException, forbid_unused_kwargs

MAX_BRANCHES = 16
DEFAULT = "default"  # fill_value: 128 (DALI) or 0 (torchvision)
_counter = itertools.count()


def resolve_fill(fill_value, convention):
    if isinstance(fill_value, str) and fill_value == DEFAULT:
        return 0 if convention == "torchvision" else 128
    return fill_value


def _choose_name():
    pipe = _graph.current_pipeline()
    if pipe is None:
        return f"auto_augment_choose_g{next(_counter)}"
    k = getattr(pipe, "_stk_auto_aug_calls", 0)
    pipe._stk_auto_aug_calls = k + 1
    return f"auto_augment_choose_{k}"


def choose(seed, **args):
    kw = {k: v for k, v in args.items() if v is not None}
    kw["name"] = _choose_name()
    if seed is not None:
        kw["seed"] = int(seed)
    return fn.auto_augment.choose(**kw)


# ---------------------------------------------------------------------------------
# generic path
# ---------------------------------------------------------------------------------

def _select(index, values):
    return _graph.call_op("select", [index] + list(values), {},
                          what="automatic augmentation's per-sample selection")


def _group(index, branches, data):
    outs = []
    for k, branch in enumerate(branches):
        if branch is None:
            outs.append(data)
            continue
        _graph.push_guard(index, k)
        try:
            outs.append(branch(data))
        finally:
            _graph.pop_guard()
    return _select(index, outs)


def switch(index, branches, data):
    """Per sample, branches[index](data) (None: data itself), nested by 16s."""
    if len(branches) <= MAX_BRANCHES:
        return _group(index, branches, data)
    outer, inner = index // MAX_BRANCHES, index % MAX_BRANCHES
    results = []
    for g in range(0, len(branches), MAX_BRANCHES):
        _graph.push_guard(outer, g // MAX_BRANCHES)
        try:
            results.append(_group(inner, branches[g:g + MAX_BRANCHES], data))
        finally:
            _graph.pop_guard()
    return _select(outer, results)


def _param_on_device(aug, param, data):
    """DALI's param_device: "cpu" (default), "gpu", or "auto" (the data's device). The
    parameter is looked up on the host (stage_param); for "gpu" it is moved there by a
    named copy (named: the op counter, hence the names and random streams of the
    augmentation's own operators, stays as on the CPU)."""
    device = aug.param_device
    if device == "auto":
        device = data.device if isinstance(data, DataNode) else "cpu"
    if param is None or device != "gpu" or not isinstance(param, DataNode):
        return param
    return _graph.call_op("copy", [param], {"device": "gpu", "name": f"{param.op.name}_gpu"})


def _is_node(a, b):
    return a.op is b.op and a.index == b.index


def _gpu_problem(out, data):
    """Why the branch built from GPU `data` cannot run on the GPU (None: it can): an
    operator of it that runs on the CPU only but reads GPU data, or a result on the CPU."""
    if not isinstance(out, DataNode):
        return f"it returned {type(out).__name__}, not a DataNode"
    seen, stack = set(), [out]
    while stack:
        node = stack.pop()
        if _is_node(node, data) or id(node.op) in seen:
            continue
        seen.add(id(node.op))
        op = node.op
        for x in op.inputs:
            if op.device == "cpu" and x.device == "gpu":
                devices = ", ".join(op.schema.devices)
                return (f"its operator '{op.name}' ({op.schema.name}, devices: {devices}) runs on "
                        f"the CPU and reads GPU data")
            stack.append(x)
    if out.device != "gpu":
        return "it returns CPU data"
    return None


def _branch(aug, decisions, stage, num_bins, kwargs, name_hint):
    def run(data):
        on_gpu = isinstance(data, DataNode) and data.device == "gpu"
        param = _param_on_device(aug, aug._param_node(decisions, stage, num_bins), data)
        try:
            out = aug._call_with(data, param, kwargs)
        except MissingArgException as e:
            if e.missing_args == ["shape"] and aug._builtin in ("translate_x", "translate_y"):
                raise Exception(
                    f"The augmentation `{aug.name}` requires `shape` argument that describes "
                    f"image shape (in HWC layout). Please provide it as `shape` argument to "
                    f"`{name_hint}` call. You can get the image shape from encoded images with "
                    f"`fn.peek_image_shape`. Alternatively, use the suites without shapes "
                    f"(translate_x_no_shape / translate_y_no_shape).") from None
            raise
        except Exception as e:
            if not on_gpu:
                raise
            raise Exception(f"`{name_hint}`: the augmentation `{aug.name}` cannot run on GPU "
                            f"data: {e}") from e
        if not on_gpu and isinstance(out, DataNode) and out.device == "gpu":
            raise Exception(
                f"`{name_hint}`: the augmentation `{aug.name}` returns GPU data for CPU data "
                f"(param_device={aug.param_device!r}?); every augmentation of a list must give "
                "its result on the data's device.")
        problem = _gpu_problem(out, data) if on_gpu else None
        if problem:
            raise Exception(
                f"`{name_hint}`: the augmentation `{aug.name}` cannot run on GPU data: {problem}. "
                "Build it from operators with a GPU backend, or apply the list before moving the "
                "images to the GPU.")
        return out
    return run


def run_stages(augmentations, data, decisions, num_stages, num_bins, kwargs, skip, call_name):
    """The generic path: `augmentations` is the list the decisions index. On GPU data too:
    per stage, each augmentation's operators run on the GPU for the sub-batch of the
    samples that picked it (its parameter looked up on the host from the same decisions
    as the CPU path), the built-in ones through auto_augment.augment's GPU backend (the
    fused kernel with one step per sample), and a GPU select merges the sub-batches."""
    for stage in range(num_stages):
        index = fn.auto_augment.stage_index(decisions, stage=stage, skip_index=len(augmentations))
        branches = [_branch(a, decisions, stage, num_bins, kwargs, call_name) for a in augmentations]
        if skip:
            branches.append(None)
        data = switch(index, branches, data)
    return data


# ---------------------------------------------------------------------------------
# fused path
# ---------------------------------------------------------------------------------

def _translations(augmentations):
    """(use_shape, max_translate_abs, max_translate_rel) from the translate entries, or None
    when they do not fit one setting."""
    rel, hw = set(), [None, None]
    for a in augmentations:
        if a._builtin not in ("translate_x", "translate_y"):
            continue
        rel.add(not a.op.__name__.endswith("_no_shape"))
        hw[1 if a._builtin == "translate_x" else 0] = float(np.ravel(a.mag_range)[1])
    if len(rel) > 1:
        return None
    if not rel:
        return False, None, None
    hw = [hw[0] if hw[0] is not None else hw[1], hw[1] if hw[1] is not None else hw[0]]
    return (True, None, hw) if rel.pop() else (False, hw, None)


def _translate_base(aug):
    """The built-in translation (either variant) whose op `aug` wraps."""
    from . import augmentations as a
    ns = a.torchvision if aug.convention == "torchvision" else a
    for name in ("translate_x", "translate_y", "translate_x_no_shape", "translate_y_no_shape"):
        base = getattr(ns, name)
        if base.op is aug.op:
            return base
    return None


def fusable(augmentations, references):
    """True when every augmentation is a stoker built-in configured as in `references`
    (name -> Augmentation) but for translation ranges, which the operator takes as
    arguments."""
    conv = {a.convention for a in augmentations}
    if len(conv) != 1 or _translations(augmentations) is None:
        return False
    for a in augmentations:
        ref = references.get(a.name)
        if a._builtin is None or ref is None or ref._builtin != a._builtin:
            return False
        if a._builtin in ("translate_x", "translate_y"):
            base = _translate_base(a)
            if base is None or a.randomly_negate != base.randomly_negate or \
                    a._mag_to_param is not base._mag_to_param or isinstance(a.mag_range, np.ndarray):
                return False
        elif a._key() != ref._key():
            return False
    return True


def fused_args(augmentations, kwargs, call_name):
    """auto_augment.apply / choose arguments for a fusable list and the apply_* kwargs."""
    kwargs = dict(kwargs)
    convention = augmentations[0].convention
    use_shape, max_abs, max_rel = _translations(augmentations)
    forbid_unused_kwargs(augmentations, kwargs, call_name)
    args = {"convention": convention, "augmentations": [a._builtin for a in augmentations]}
    if max_abs is not None:
        args["max_translate_abs"] = max_abs
    if max_rel is not None:
        args["max_translate_rel"] = max_rel
    apply = {}
    shape = kwargs.get("shape")
    if convention == "dali":
        args["use_shape"] = use_shape
        if use_shape:
            if shape is None:
                raise Exception(f"The translations of this list require `shape` argument that "
                                f"describes image shape (in HWC layout). Please provide it as "
                                f"`shape` argument to `{call_name}` call.")
            apply["shape"] = shape if isinstance(shape, DataNode) else [float(v) for v in shape]
    fill = kwargs.get("fill_value", 0 if convention == "torchvision" else 128)
    if fill is None:
        apply["border"] = "clamp"
    else:
        apply["fill_value"] = [float(v) for v in np.ravel(fill)]
    if kwargs.get("interp_type") is not None:
        apply["interp_type"] = kwargs["interp_type"]
    return args, apply


def apply_fused(data, decisions, args, apply, masks, boxes, normalized_boxes):
    """One ``auto_augment.apply``, on the GPU when the images are there (the decisions
    are drawn on the host either way, so both backends apply the same sequence)."""
    device = "gpu" if isinstance(data, DataNode) and data.device == "gpu" else "cpu"
    if device == "gpu" and isinstance(boxes, DataNode) and boxes.device == "gpu":
        raise Exception("auto augmentation on the GPU moves boxes on the host: pass the boxes "
                        "as a CPU node")
    inputs = [data]
    if masks is not None:
        inputs.append(masks)
    if boxes is not None:
        inputs.append(boxes)
    outs = fn.auto_augment.apply(*inputs, decisions=decisions, with_mask=masks is not None,
                                 with_boxes=boxes is not None, normalized_boxes=normalized_boxes,
                                 device=device, **args, **apply)
    result = [outs[0]]
    if masks is not None:
        result.append(outs[1])
    if boxes is not None:
        result.append(outs[2])
    return outs[0] if len(result) == 1 else tuple(result)


def no_targets(masks, boxes, call_name, augmentations=()):
    if masks is not None or boxes is not None:
        custom = [a.name for a in augmentations if a._builtin is None]
        which = f": {', '.join(f'`{n}`' for n in custom)}" if custom else \
            " (or built-in ones configured differently from the scheme's list)"
        raise Exception(f"`{call_name}`: masks and boxes follow the built-in augmentations "
                        f"only (the fused operator); this list has custom augmentations{which}.")
