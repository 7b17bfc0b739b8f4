#!/usr/bin/env python3
"""How much of DALI's operator list stoker has: lists DALI's `nvidia.dali.fn` operators
(through a Python that has DALI, e.g. a separate venv with nvidia-dali-cuda130), leaves out
DALI's hidden operators and its legacy names (`*_reader`, `image_decoder*`, `uniform`, ...,
kept by DALI for old code), and prints the share stoker's registry has and what is missing.

With --args, also lists, for every operator both have, DALI's keyword arguments that
stoker's schema lacks (DALI's generic ones left out: device, name, seed, preserve,
bytes_per_sample_hint, _*; deprecated ones counted apart), and the operators where DALI
takes more positional inputs (e.g. random.beta's `shape_like`).

With --devices, also lists the operators both have that DALI runs on the GPU (its
"gpu" or "mixed" backend) and stoker only on the CPU.

usage: scripts/dali_coverage.py [--dali-python /path/to/venv/bin/python] [--args] [--devices]
"""
import argparse
import json
import subprocess
import sys

LIST_DALI = r"""
import types, nvidia.dali.fn as fn
seen = set()
def walk(mod, prefix):
    for n in dir(mod):
        if n.startswith('_'):
            continue
        o = getattr(mod, n)
        if isinstance(o, types.ModuleType):
            if o.__name__.startswith('nvidia.dali.fn'):
                walk(o, prefix + n + '.')
        elif callable(o):
            seen.add(prefix + n)
walk(fn, '')
print('\n'.join(sorted(seen)))
"""
# Per operator: DALI's keyword arguments (from the fn function's signature, which also
# covers operators defined in Python such as experimental.tensor_resize), the deprecated
# ones among them (from the C++ schema, or the schema it is an alias of), and the inputs.
LIST_DALI_ARGS = r"""
import inspect, json, sys
import nvidia.dali.fn as fn, nvidia.dali.backend as b
out = {}
for name in sys.stdin.read().split():
    f = fn
    for part in name.split('.'):
        f = getattr(f, part)
    kw = [p.name for p in inspect.signature(f).parameters.values()
          if p.kind == p.KEYWORD_ONLY]
    schemas = []
    sn = getattr(f, '_schema_name', None)
    while sn and len(schemas) < 4:
        try:
            sc = b.GetSchema(sn)
        except Exception:
            break
        schemas.append(sc)
        sn = sc.DeprecatedInFavorOf() or None
    dep = [a for a in kw if any(sc.HasArgument(a) and sc.IsDeprecatedArg(a) for sc in schemas)]
    inputs = None
    # the inputs' names from a schema that documents them (experimental.filter's does not;
    # the filter it is deprecated in favour of does)
    schemas.sort(key=lambda sc: not sc.HasInputDox())
    for sc in schemas:
        if sc.MaxNumInput() > 0:
            n = sc.MaxNumInput()
            inputs = ([sc.GetInputName(i) if sc.HasInputDox() else f"input{i}" for i in range(n)]
                      if n <= 8 else n)
            break
    out[name] = {"args": kw, "deprecated": dep, "inputs": inputs}
print(json.dumps(out))
"""
# Per operator: the devices DALI registers its schema for (cpu, gpu, mixed).
LIST_DALI_DEVICES = r"""
import json, sys
import nvidia.dali.fn as fn, nvidia.dali.backend as b
gpu, mixed, cpu = set(b.RegisteredGPUOps()), set(b.RegisteredMixedOps()), set(b.RegisteredCPUOps())
out = {}
for name in sys.stdin.read().split():
    f = fn
    for part in name.split('.'):
        f = getattr(f, part)
    sn = getattr(f, '_schema_name', None)
    out[name] = [d for d, reg in (("cpu", cpu), ("gpu", gpu), ("mixed", mixed)) if sn in reg]
print(json.dumps(out))
"""
# DALI's arguments every operator takes, or that have no meaning in stoker's executor.
GENERIC_ARGS = {"device", "name", "seed", "preserve", "bytes_per_sample_hint"}
LEGACY = {"audio_decoder", "caffe2_reader", "caffe_reader", "coco_reader", "coin_flip", "file_reader",
          "image_decoder", "image_decoder_crop", "image_decoder_random_crop", "image_decoder_slice",
          "mxnet_reader", "nemo_asr_reader", "normal_distribution", "numpy_reader", "sequence_reader",
          "tfrecord_reader", "transform_translation", "uniform", "video_reader", "video_reader_resize"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dali-python", default="/work/dali-venv/bin/python")
    ap.add_argument("--args", action="store_true",
                    help="also list DALI's arguments and inputs missing from operators both have")
    ap.add_argument("--devices", action="store_true",
                    help="also list operators DALI runs on the GPU and stoker only on the CPU")
    args = ap.parse_args()
    out = subprocess.run([args.dali_python, "-c", LIST_DALI], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cannot list DALI's operators with {args.dali_python}: {out.stderr.strip()[-300:]}")
    dali = [n for n in out.stdout.split() if "hidden" not in n and n not in LEGACY]
    from stoker import _schema
    ours = set(_schema.registry())
    missing = [n for n in dali if n not in ours]
    have = len(dali) - len(missing)
    print(f"DALI operators (hidden and legacy names left out): {len(dali)}; stoker has {have} "
          f"({100.0 * have / len(dali):.1f}%)")
    print("missing: " + (", ".join(missing) if missing else "none"))
    if args.args:
        report_args(args.dali_python, [n for n in dali if n in ours], _schema.registry())
    if args.devices:
        report_devices(args.dali_python, [n for n in dali if n in ours], _schema.registry())


def python_kwargs(name):
    """The keyword arguments stoker's fn.<name> takes beyond its schema (Python hooks such
    as readers.tfrecord's `features`, and operators written in Python: external_source)."""
    import inspect
    from stoker import fn
    f = fn
    for part in name.split("."):
        f = getattr(f, part, None)
        if f is None:
            return set()
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind == p.KEYWORD_ONLY}


def report_args(dali_python, common, reg):
    """Prints, per operator, DALI's arguments (and extra inputs) that stoker's lacks."""
    out = subprocess.run([dali_python, "-c", LIST_DALI_ARGS], input="\n".join(common),
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cannot read DALI's arguments with {dali_python}: {out.stderr.strip()[-300:]}")
    dali = json.loads(out.stdout)
    total = total_dep = ops_short = 0
    lines = []
    for name in common:
        d, ours = dali[name], reg[name]
        have = set(ours.args) | python_kwargs(name)
        want = [a for a in d["args"] if a not in GENERIC_ARGS and not a.startswith("_")]
        lack = [a for a in want if a not in have]
        dep = [a for a in lack if a in d["deprecated"]]
        live = [a for a in lack if a not in dep]
        extra_inputs = []
        have_in = max(ours.max_inputs, 0)
        if isinstance(d["inputs"], int):  # variadic (transforms.combine, cat, ...)
            if d["inputs"] > have_in:
                extra_inputs = [f"up to {d['inputs']} (stoker {have_in})"]
        elif d["inputs"]:
            # an input stoker takes as an argument of the same name (random.choice's `a`,
            # through the Python call form) is covered
            named = [n for n in d["inputs"] if n not in ours.args]
            extra_inputs = named[have_in:]
        if not live and not dep and not extra_inputs:
            continue
        ops_short += 1
        total += len(live)
        total_dep += len(dep)
        parts = []
        if live:
            parts.append(", ".join(live))
        if dep:
            parts.append("deprecated: " + ", ".join(dep))
        if extra_inputs:
            parts.append("inputs: " + ", ".join(extra_inputs))
        lines.append(f"  {name}: " + "; ".join(parts))
    print(f"arguments DALI has and stoker lacks: {total} (and {total_dep} deprecated ones) "
          f"in {ops_short} of {len(common)} operators")
    print("\n".join(lines))


def report_devices(dali_python, common, reg):
    """Prints the operators DALI has a GPU or mixed backend for and stoker does not."""
    out = subprocess.run([dali_python, "-c", LIST_DALI_DEVICES], input="\n".join(common),
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cannot read DALI's devices with {dali_python}: {out.stderr.strip()[-300:]}")
    dali = json.loads(out.stdout)
    on_gpu = [n for n in common if {"gpu", "mixed"} & set(dali[n])]
    lack = [n for n in on_gpu if not {"gpu", "mixed"} & set(reg[n].devices)]
    print(f"operators DALI runs on the GPU: {len(on_gpu)}; stoker runs "
          f"{len(on_gpu) - len(lack)} of them there")
    print("CPU only in stoker: " + (", ".join(lack) if lack else "none"))


if __name__ == "__main__":
    main()
