#!/usr/bin/env python3
"""Exports a PyTorch model to ONNX for placesim (`graph: {onnx: FILE}`, `placesim graph import`).

  python3 tools/export_onnx.py torchvision:resnet50 --batch 32 -o resnet50.onnx
  python3 tools/export_onnx.py my_models.py:Net --input-shape 3,64,64 --batch 8 -o net.onnx
  python3 tools/export_onnx.py mypackage.models:Net --input-shape 128 --input-dtype int64 -o net.onnx

MODEL is `torchvision:NAME` (any torchvision.models builder, without weights) or `MODULE:CLASS`,
where MODULE is a Python file or an importable module and CLASS an nn.Module built with no
arguments. The model is traced in training mode (BatchNormalization and Dropout as they train, no
folding of normalisation into convolutions) at a fixed batch, so every shape in the file is static.
Needs Debian's python3-torch (and python3-torchvision for torchvision models); no network, no
pretrained weights. The weights in the file are the model's random initial ones: placesim reads
only their shapes. The file's metadata names the trainable parameters
(`placesim.trainable_parameters`, a JSON list, and `placesim.trainable_parameter_count`).
"""
import argparse
import importlib
import importlib.util
import json
import os
import shlex
import sys

# torchvision's classifiers take 224x224 images, but for a few.
DEFAULT_IMAGE = {"inception_v3": 299}


def fail(message):
    print(f"export_onnx: error: {message}", file=sys.stderr)
    sys.exit(2)


def not_installed(what, package, debian_python="/usr/bin/python3"):
    """Names the interpreter that ran: Debian's python3-torch and python3-torchvision are
    installed for Debian's own /usr/bin/python3 only, which a pyenv or venv `python3` earlier in
    PATH does not see."""
    message = f"{what} is not installed for {sys.executable} (Debian: apt-get install {package})"
    # A venv's interpreter may be a symlink to Debian's, with its own site-packages.
    same = os.path.realpath(sys.executable) == os.path.realpath(debian_python) and sys.prefix == sys.base_prefix
    if os.path.exists(debian_python) and not same:
        message += f"; Debian's {package} is installed for {debian_python}: run {shlex.join([debian_python] + sys.argv)}"
    return message


def parse_shape(text, what):
    try:
        dims = [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        fail(f"{what}: expected whole numbers separated by commas, such as 3,224,224, got '{text}'")
    if not dims or any(d < 1 for d in dims):
        fail(f"{what}: expected whole numbers >= 1 separated by commas, such as 3,224,224, got '{text}'")
    return dims


def load_model(spec, torch):
    if ":" not in spec:
        fail(f"model '{spec}': expected torchvision:NAME or MODULE:CLASS")
    where, name = spec.rsplit(":", 1)
    if where == "torchvision":
        try:
            import torchvision
        except ImportError:
            fail(not_installed("torchvision", "python3-torchvision"))
        builders = torchvision.models
        names = sorted(builders.list_models(module=builders)) if hasattr(builders, "list_models") else []
        if not hasattr(builders, name) or (names and name not in names):
            fail(f"torchvision has no classification model '{name}' (it has: {', '.join(names)})")
        kwargs = {"weights": None}
        if name == "inception_v3":
            kwargs["aux_logits"] = False  # its auxiliary head is a second output, used only when training with it
            kwargs["init_weights"] = False
        if name.startswith("googlenet"):
            kwargs["aux_logits"] = False
            kwargs["init_weights"] = False
        return getattr(builders, name)(**kwargs), [3, DEFAULT_IMAGE.get(name, 224), DEFAULT_IMAGE.get(name, 224)]
    if where.endswith(".py") or os.path.sep in where:
        if not os.path.exists(where):
            fail(f"model '{spec}': no file '{where}'")
        module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(where))[0], where)
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            fail(f"model '{spec}': cannot import module '{where}': {e}")
    if not hasattr(module, name):
        fail(f"model '{spec}': module '{where}' has no '{name}'")
    model = getattr(module, name)()
    if not isinstance(model, torch.nn.Module):
        fail(f"model '{spec}': {name}() is not a torch.nn.Module")
    return model, None


def varint(n):
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def append_metadata(path, entries):
    """Appends ModelProto.metadata_props entries (field 14, StringStringEntryProto {key = 1,
    value = 2}) to the file: a parser merges a message's concatenated encodings, appending to
    repeated fields, so this needs no onnx package (Debian has none for this Python)."""
    with open(path, "ab") as f:
        for key, value in entries:
            f.write(length_delimited(14, length_delimited(1, key.encode()) + length_delimited(2, value.encode())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("model", help="torchvision:NAME or MODULE:CLASS (a .py file or an importable module)")
    parser.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    parser.add_argument("--batch", type=int, default=1, help="batch size, fixed into the file (default 1)")
    parser.add_argument("--input-shape", help="one sample's shape, comma-separated (torchvision default: 3,224,224)")
    parser.add_argument("--input-dtype", default="float32", choices=["float32", "float16", "int64", "int32"],
                        help="the input's element type (int64 for token ids)")
    parser.add_argument("--vocab", type=int, default=2, help="int inputs are drawn from [0, vocab) (default 2)")
    parser.add_argument("--opset", type=int, default=13, help="ONNX opset (default 13; Debian's libonnx reads up to 17)")
    args = parser.parse_args()
    if args.batch < 1:
        fail(f"--batch: expected a whole number >= 1, got {args.batch}")
    try:
        import torch
    except ImportError:
        fail(not_installed("PyTorch", "python3-torch"))
    torch.manual_seed(0)
    model, default_shape = load_model(args.model, torch)
    shape = parse_shape(args.input_shape, "--input-shape") if args.input_shape else default_shape
    if shape is None:
        fail("--input-shape: required for MODULE:CLASS models (one sample's shape, such as 3,224,224)")
    dtype = getattr(torch, args.input_dtype)
    if dtype in (torch.int64, torch.int32):
        example = torch.randint(0, args.vocab, [args.batch] + shape, dtype=dtype)
    else:
        example = torch.randn([args.batch] + shape).to(dtype)
    model.train()
    import warnings
    with warnings.catch_warnings():
        # Tracing in training mode warns once per BatchNormalization about its running-statistics
        # counter, which ONNX does not model.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), args.output, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=args.opset, input_names=["input"],
                          output_names=["output"])
    # Which initializers are trainable, which placesim's import would otherwise guess (a
    # floating-point initializer of more than one element that a gradient reaches): a buffer added
    # to an activation is not, a scalar nn.Parameter is.
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    append_metadata(args.output, [("placesim.trainable_parameters", json.dumps(trainable)),
                                  ("placesim.trainable_parameter_count", str(parameters))])
    print(f"wrote {args.output}: {args.model}, input [{', '.join(map(str, [args.batch] + shape))}] {args.input_dtype}, "
          f"{parameters / 1e6:.4g} M trainable parameters, opset {args.opset}")


if __name__ == "__main__":
    main()
