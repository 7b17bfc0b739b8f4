"""The registry-driven CPU/GPU parity check (docs/text-form.md, "GPU parity checks").

Every operator with a GPU (or mixed) backend carries, in its schema, `gpu_check`: a few
lines of the pipeline text form that apply it to the test photos. This module turns one
such check into a pipeline that runs the operator on both devices over the same batch:

- `IN` is the decoded photos (uint8 HWC RGB, a ragged batch of different sizes) and `ENC`
  their encoded bytes;
- every line containing `@` is written twice: once with `@` = "cpu" on `IN`, once with
  `@` = "gpu" (or "mixed", for operators that have no "gpu" device) on a GPU copy of `IN`;
  edges it defines get a `_cpu` / `_gpu` suffix in the two copies;
- other lines (random argument nodes) are written once and feed both copies, so
  per-sample random arguments are identical by construction;
- `return a, b` (or `return op(...)`) names the outputs compared sample by sample;
- an optional first line `# atol=1 mismatch=0.001 resize=120x160 gray iterations=2` sets
  the tolerance, the fraction of elements allowed beyond it, a resize of the photos to one
  size first (a dense batch), grayscale decoding and the number of batches.

tests/python/test_gpu_registry_parity.py runs every check: the CPU copy in CI, both copies
on a GPU machine.
"""
import re
from dataclasses import dataclass, field

from gpu_parity import PHOTOS

_DIRECTIVES = {"atol": float, "mismatch": float, "resize": str, "gray": bool, "iterations": int}


@dataclass
class ParityCheck:
    op: str
    atol: float = 0.0
    mismatch: float = 0.0
    resize: tuple = None
    gray: bool = False
    iterations: int = 2
    shared: list = field(default_factory=list)  # lines written once
    per_device: list = field(default_factory=list)  # lines with '@'
    returns: list = field(default_factory=list)  # compared edges


class CheckSyntaxError(ValueError):
    pass


def parse(op, text):
    """A ParityCheck from a schema's gpu_check text."""
    if not text or not text.strip():
        raise CheckSyntaxError(f"{op}: empty gpu_check")
    check = ParityCheck(op)
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if lines[0].startswith("#"):
        _parse_directives(check, lines.pop(0)[1:])
    for ln in lines:
        if ln.startswith("#"):
            continue
        if ln.startswith("return "):
            if check.returns:
                raise CheckSyntaxError(f"{op}: more than one return line")
            _parse_return(check, ln[len("return "):].strip())
        elif "@" in ln:
            check.per_device.append(ln)
        else:
            check.shared.append(ln)
    if not check.returns:
        raise CheckSyntaxError(f"{op}: no return line")
    if not check.per_device:
        raise CheckSyntaxError(f"{op}: no line with '@' (nothing runs on the two devices)")
    return check


def _parse_directives(check, text):
    for word in text.split():
        key, _, value = word.partition("=")
        if key not in _DIRECTIVES:
            raise CheckSyntaxError(f"{check.op}: unknown directive {key!r}")
        kind = _DIRECTIVES[key]
        if kind is bool:
            setattr(check, key, True)
        elif key == "resize":
            h, _, w = value.partition("x")
            check.resize = (int(h), int(w))
        else:
            setattr(check, key, kind(value))


def _parse_return(check, expr):
    if "(" in expr:  # `return op(...)`: the call becomes a device line
        check.per_device.append(f"OUT = {expr}")
        check.returns = ["OUT"]
    else:
        check.returns = [e.strip() for e in expr.split(",") if e.strip()]


def _defined(line):
    lhs = line.split("=", 1)[0]
    return [e.strip() for e in lhs.split(",")]


def _rename(line, names, suffix):
    """Renames whole-word edge names outside string literals."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', line)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
    for i in range(0, len(parts), 2):
        parts[i] = pattern.sub(lambda m: m.group(1) + suffix, parts[i])
    return "".join(parts)


def _op_of(line):
    m = re.match(r"\s*[^=]*=\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\(", line)
    return m.group(1) if m else None


def device_lines(check, device, registry):
    """The check's per-device lines for "cpu" or "gpu", edges suffixed."""
    local = set()
    for ln in check.per_device:
        local.update(_defined(ln))
    suffix = "_" + device
    out = []
    for ln in check.per_device:
        dev = device
        if device == "gpu":
            schema = registry.get(_op_of(ln))
            if schema is not None and "gpu" not in schema.devices and "mixed" in schema.devices:
                dev = "mixed"
            ln = _rename(ln, {"IN"}, "_gpu")  # the GPU copy reads the photos' GPU copy
        out.append(_rename(ln, local, suffix).replace("@", f'"{dev}"'))
    return out


def pipeline_text(check, registry, devices=("cpu", "gpu"), files=None, batch_size=None):
    """The text form of a pipeline returning the check's outputs for each device, in
    `devices` order (all outputs of the first device, then the next)."""
    files = files or PHOTOS
    batch = batch_size or len(files)
    out = [f"batch_size = {batch}", "num_threads = 2", "seed = 42",
           f"device_id = {0 if 'gpu' in devices else -1}"]
    file_list = ", ".join('"' + f.replace("\\", "\\\\").replace('"', '\\"') + '"' for f in files)
    out.append(f'ENC, LABEL = readers.file(files=[{file_list}], name="Reader")')
    color = "GRAY" if check.gray else "RGB"
    if check.resize:
        out.append(f'IN_decoded = decoders.image(ENC, output_type="{color}")')
        out.append(f"IN = resize(IN_decoded, resize_y={check.resize[0]}, resize_x={check.resize[1]})")
    else:
        out.append(f'IN = decoders.image(ENC, output_type="{color}")')
    out.extend(check.shared)
    if "gpu" in devices:
        out.append('IN_gpu = copy(IN, device="gpu")')
    returned = []
    for dev in devices:
        out.extend(device_lines(check, dev, registry))
        returned += [r + "_" + dev for r in check.returns]
    out.append("return " + ", ".join(returned))
    return "\n".join(out) + "\n"
