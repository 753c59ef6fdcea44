#!/usr/bin/env python3
"""The PyTorch twin of server.InferenceServer: the same model, the same protocol, the same batching.

It serves a Sequential(Linear, ReLU, ...) MLP from a .safetensors file over the HTTP/REST side of
the Open Inference Protocol (KServe v2), on aiohttp with uvloop:

    GET  /v2, /v2/health/live, /v2/health/ready, /v2/models/{name}, /v2/models/{name}/ready
    POST /v2/models/{name}/infer   JSON FP32 tensors [n, width], or the binary tensor data
                                   extension (Inference-Header-Content-Length)

and the same model paths under /v2/models/{name}/versions/1. Every answer is JSON. Errors are the
Java server's, message for message: 400 {"error": ...} for anything malformed (it never reaches the
GPU) or over --max-rows / --max-elements, 413 for a body over --max-body-bytes, 404 for an unknown
model, version or path, 405 (with Allow) for a path's wrong method, 503 when not ready, when the
queue is full, when no answer comes in time, or while shutting down. A non-finite output value is
written as the string "NaN", "Infinity" or "-Infinity", as Jackson writes it. On SIGTERM or SIGINT
the server stops taking requests (503) and gives those in flight up to --shutdown-timeout-s.

Batching is the engine's (org.cudagraph4j.serving, ServingOptions.defaults()): requests go into a
bounded queue (4096 pieces; a request above the largest bucket is chunked into pieces of at most
256 rows, each counting one); a batcher takes the first piece, then gathers more until it holds the
largest bucket or 200 us have passed since it took the first; the batch is padded with zero rows to
the smallest bucket of the ladder 1, 2, 4, 8, 16, ..., 256 that holds it and runs as one replay of
that bucket's torch.cuda.graph. The graphs are captured at startup, largest first, into one shared
memory pool, on static input and output tensors; the GPU work runs on one worker thread (so the
event loop never waits for the GPU) through pinned host staging buffers, with at most two batches
handed to it at once (the engine's two lanes), so the next batch is gathered while one runs. FP32,
TF32 off. Each request gets exactly its own rows back: pad rows are computed and dropped. The GIL's
switch interval is 0.5 ms rather than 5, so the GPU thread is not held up for long by a busy loop.

    python3 torch_server.py --model mlp.safetensors [--name mlp] [--port 8001] [--host 127.0.0.1]
        [--max-wait-us 200] [--queue-capacity 4096] [--max-body-bytes 8388608] [--max-rows 4096]
        [--max-elements 4194304] [--shutdown-timeout-s 10] [--device cuda|cpu] [--gil-switch-ms 0.5]

--device cpu runs the same server with the model eager on the CPU (no graphs): for tests on
machines without a GPU. When it is ready it prints one line, "serving NAME on http://HOST:PORT (...)".

The parts that need neither torch nor aiohttp (the protocol, the safetensors reader, the ladder,
the batcher and the padding) import only numpy, so test_torch_server.py tests them anywhere.
"""
import argparse
import asyncio
import collections
import functools
import json
import math
import re
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

INPUT = "input"
OUTPUT = "output"
HEADER_LENGTH = "Inference-Header-Content-Length"
MAX_HEADER_BYTES = 100 << 20
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
ANSWER_TIMEOUT_S = 30.0  # the engine's requestTimeout
MAX_ROWS = 4096  # rows per request (--max-rows)
MAX_ELEMENTS = 4 << 20  # input values per request (--max-elements)
MAX_BODY_BYTES = 8 << 20  # --max-body-bytes
SHUTDOWN_TIMEOUT_S = 10.0  # how long a SIGTERM waits for the requests in flight (--shutdown-timeout-s)
_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Java's Integer.parseInt takes
_MISSING = object()


# ---------------------------------------------------------------------------------------------
# The bucket ladder (org.cudagraph4j.serving.BucketLadder)
# ---------------------------------------------------------------------------------------------

def default_ladder(largest=256):
    """vLLM's capture sizes, as BucketLadder.powersThenStepsOf8: 1, 2, 4, then steps of 8 to largest."""
    if largest < 8 or largest % 8:
        raise ValueError(f"the largest bucket must be a multiple of 8 from 8 up, got {largest}")
    return [1, 2, 4] + list(range(8, largest + 1, 8))


class Ladder:
    """Batch sizes with a graph each; a batch runs on the smallest bucket that holds it."""

    def __init__(self, sizes):
        sizes = sorted(sizes)
        if not sizes or sizes[0] < 1 or len(set(sizes)) != len(sizes):
            raise ValueError(f"bucket sizes must be distinct and at least 1, got {sizes}")
        self.sizes = sizes
        self.largest = sizes[-1]
        # bucket_for by table: rows -> bucket, for 1..largest
        self._table = [0] * (self.largest + 1)
        b = 0
        for rows in range(1, self.largest + 1):
            while sizes[b] < rows:
                b += 1
            self._table[rows] = sizes[b]

    def bucket_for(self, rows):
        if rows < 1 or rows > self.largest:
            raise ValueError(f"a batch has 1 to {self.largest} rows here, got {rows}")
        return self._table[rows]

    def pieces(self, rows):
        """How a request is split: pieces of the largest bucket, then the rest."""
        if rows < 1:
            raise ValueError(f"a request has at least one row, got {rows}")
        return [min(self.largest, rows - first) for first in range(0, rows, self.largest)]


# ---------------------------------------------------------------------------------------------
# The protocol (server.KServeProtocol): parsing with every check a 400 stands for, and responses
# ---------------------------------------------------------------------------------------------

class ProtocolError(Exception):
    """A request the protocol refuses: the HTTP status and the {"error": ...} message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def bad_request(message):
    return ProtocolError(400, message)


def error_body(message):
    return json.dumps({"error": message}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _compact(value):
    """A JSON value as Jackson's JsonNode.toString() writes it (compact)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_text(node):
    """Jackson's path(...).asText(null): null when missing or null, text of scalars, "" for containers."""
    if node is None:
        return None
    if isinstance(node, str):
        return node
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, (int, float)):
        return _compact(node)
    return ""


def _as_boolean(node):
    """Jackson's asBoolean(false): true for true, a non-zero integer, or the text "true"."""
    if isinstance(node, bool):
        return node
    if _is_int(node):
        return node != 0
    if isinstance(node, str):
        return node.strip() == "true"
    return False


def _as_long(node):
    """Jackson's asLong(-1) for what binary_data_size may hold."""
    if _is_int(node):
        return node
    if isinstance(node, float) and math.isfinite(node):
        return int(node)
    if isinstance(node, str):
        try:
            return int(node.strip())
        except ValueError:
            return -1
    if isinstance(node, bool):
        return 1 if node else 0
    return -1


def _path(node, key):
    return node.get(key) if isinstance(node, dict) else None


def _flatten(values, into):
    """Appends the numbers of nested arrays, row-major; refuses anything that is not a number."""
    for value in values:
        if isinstance(value, list):
            _flatten(value, into)
        elif _is_number(value):
            into.append(value)
        else:
            raise bad_request(f'input "{INPUT}" holds a value that is not a number: {_compact(value)}')


def _to_float32(values):
    """A flat list of JSON numbers as float32; non-finite where float32 cannot hold a value."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(values, dtype=np.float64).astype(np.float32)
    except OverflowError:  # an integer beyond float64: converted one by one, as Jackson's floatValue does
        out = np.empty(len(values), dtype=np.float32)
        for i, value in enumerate(values):
            try:
                out[i] = float(value)
            except OverflowError:
                out[i] = math.inf
        return out


class Request:
    """A parsed request: its id (or None), its rows as float32 [rows, width], and the answer's form."""

    __slots__ = ("id", "rows", "data", "binary_output")

    def __init__(self, req_id, rows, data, binary_output):
        self.id = req_id
        self.rows = rows
        self.data = data
        self.binary_output = binary_output


class Protocol:
    """The Open Inference Protocol for one FP32 model: input "input" [n, in], output "output" [n, out]."""

    def __init__(self, model_name, input_width, output_width, platform="pytorch", max_rows=MAX_ROWS,
                 max_elements=MAX_ELEMENTS):
        self.model_name = model_name
        self.input_width = input_width
        self.output_width = output_width
        self.platform = platform
        self.max_rows = max_rows            # rows per request (--max-rows)
        self.max_elements = max_elements    # input values per request, rows * width (--max-elements)

    def metadata(self):
        def tensor(name, width):
            return {"name": name, "datatype": "FP32", "shape": [-1, width]}
        return _compact({"name": self.model_name, "versions": ["1"], "platform": self.platform,
                         "inputs": [tensor(INPUT, self.input_width)],
                         "outputs": [tensor(OUTPUT, self.output_width)]}).encode("utf-8")

    def parse(self, body, header_length):
        """Parses an inference request body; raises ProtocolError(400) for anything malformed.

        body: the whole body (bytes); header_length: the Inference-Header-Content-Length value, or None.
        """
        width = self.input_width
        json_length = len(body)
        if header_length is not None:
            text = header_length.strip()
            if not _INTEGER.fullmatch(text) or not INT_MIN <= int(text) <= INT_MAX:
                raise bad_request(f"{HEADER_LENGTH} is not a number: {header_length}")
            json_length = int(text)
            if json_length < 0 or json_length > len(body):
                raise bad_request(f"{HEADER_LENGTH} {json_length} is outside the body's {len(body)} bytes")
        try:
            root = json.loads(bytes(body[:json_length]).decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise bad_request(f"malformed JSON: {e}") from None
        if not isinstance(root, dict):
            raise bad_request("the request must be a JSON object")
        inputs = root.get("inputs")
        if not isinstance(inputs, list) or len(inputs) != 1:
            raise bad_request(f'the request needs exactly one input, "{INPUT}"')
        tensor = inputs[0]
        name = _as_text(_path(tensor, "name"))
        if name != INPUT:
            shown = "(no name)" if name is None else f'"{name}"'
            raise bad_request(f'unknown input {shown}; the model\'s input is "{INPUT}"')
        datatype = _as_text(_path(tensor, "datatype"))
        if datatype != "FP32":
            raise bad_request(f'input "{INPUT}" must be FP32, not {datatype if datatype is not None else "null"}')
        shape = tensor.get("shape", _MISSING) if isinstance(tensor, dict) else _MISSING
        if (not isinstance(shape, list) or len(shape) != 2
                or not all(_is_int(d) and INT_MIN <= d <= INT_MAX for d in shape)):
            raise bad_request(f'input "{INPUT}" needs shape [n, {width}], got '
                              f'{"" if shape is _MISSING else _compact(shape)}')
        rows = shape[0]
        if rows < 1 or shape[1] != width:
            raise bad_request(f'input "{INPUT}" needs shape [n, {width}] with n >= 1, got {_compact(shape)}')
        if rows > self.max_rows:
            raise bad_request(f'input "{INPUT}" has {rows} rows, over the limit of {self.max_rows} rows per request '
                              '(--max-rows)')
        elements = rows * width  # a Python int: no overflow; refused here before anything is allocated
        if elements > self.max_elements:
            raise bad_request(f'input "{INPUT}" of shape {_compact(shape)} holds {elements} values, over the limit '
                              f'of {self.max_elements} per request (--max-elements)')
        parameters = _path(tensor, "parameters")
        if isinstance(parameters, dict) and "binary_data_size" in parameters:
            binary_size = parameters["binary_data_size"]
            if header_length is None:
                raise bad_request(f"binary_data_size needs the {HEADER_LENGTH} header")
            size = _as_long(binary_size)
            if size != elements * 4 or len(body) - json_length != size:
                raise bad_request(f'input "{INPUT}" of shape {_compact(shape)} needs {elements * 4} bytes of binary '
                                  f'data; binary_data_size says {_compact(binary_size)} and the body holds '
                                  f'{len(body) - json_length}')
            data = np.frombuffer(body, dtype="<f4", count=elements, offset=json_length).astype(np.float32)
        else:
            values = _path(tensor, "data")
            if not isinstance(values, list):
                raise bad_request(f'input "{INPUT}" has no data array (or binary_data_size)')
            if values and not isinstance(values[0], list) and set(map(type, values)) <= {float, int}:
                flat = values  # the usual flat array of numbers: checked in one pass above
            else:
                flat = []
                _flatten(values, flat)
            if len(flat) != elements:
                raise bad_request(f'input "{INPUT}" of shape {_compact(shape)} needs {elements} values, '
                                  f'got {len(flat)}')
            data = _to_float32(flat)
        if not np.isfinite(data).all():
            raise bad_request(f'input "{INPUT}" holds a value that is not finite')
        binary_output = _as_boolean(_path(root.get("parameters"), "binary_data_output"))
        output_binary = _requested_binary(root.get("outputs"))
        if output_binary is not None:  # the output's own binary_data decides over binary_data_output
            binary_output = output_binary
        req_id = root.get("id")
        return Request(req_id if isinstance(req_id, str) else None, rows, data.reshape(rows, width), binary_output)

    def response(self, request, output):
        """The answer: (JSON bytes, binary bytes); the binary part is empty for a JSON-only answer."""
        head = {"model_name": self.model_name, "model_version": "1"}
        if request.id is not None:
            head["id"] = request.id
        tensor = {"name": OUTPUT, "datatype": "FP32", "shape": [request.rows, self.output_width]}
        if request.binary_output:
            binary = np.ascontiguousarray(output, dtype="<f4").tobytes()
            tensor["parameters"] = {"binary_data_size": len(binary)}
            head["outputs"] = [tensor]
            return _compact(head).encode("utf-8"), binary
        prefix = _compact(head)[:-1] + ',"outputs":[' + _compact(tensor)[:-1] + ',"data":['
        return (prefix + format_floats(output) + "]}]}").encode("utf-8"), b""


def _requested_binary(outputs):
    """Checks "outputs" (null, or a list of {"name": "output", ...}); the "output" entry's
    parameters.binary_data as a boolean, or None where no entry gives one (then binary_data_output decides)."""
    if outputs is None:
        return None
    if not isinstance(outputs, list):
        raise bad_request(f'"outputs" must be a list of output tensors, got {_compact(outputs)}')
    binary = None
    for output in outputs:
        if not isinstance(output, dict):
            raise bad_request(f'each entry of "outputs" must be an object, got {_compact(output)}')
        name = output.get("name")
        if name != OUTPUT:
            shown = f'"{name}"' if isinstance(name, str) else "(no name)"
            raise bad_request(f'unknown output {shown}; the model\'s output is "{OUTPUT}"')
        setting = _path(output.get("parameters"), "binary_data")
        if setting is not None:
            binary = _as_boolean(setting)
    return binary


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


@functools.lru_cache(maxsize=128)
def _float_format(count):
    return ",".join(["%.9g"] * count)


def _json_float(value):
    """One value as format_floats writes it: 9 significant digits, or a string for a non-finite value."""
    if math.isfinite(value):
        return "%.9g" % value
    return '"NaN"' if value != value else '"Infinity"' if value > 0 else '"-Infinity"'


def format_floats(values):
    """Comma-separated float32 values, each with 9 significant digits (enough to read back the same float32).

    Three times faster than json.dumps of the list, which writes float64's 17 digits. A non-finite value is
    written as the string "NaN", "Infinity" or "-Infinity", as Jackson writes it (the bare tokens are not JSON).
    """
    flat = np.asarray(values, dtype=np.float32).ravel()
    if flat.size == 0:
        return ""
    if not np.isfinite(flat).all():
        return ",".join([_json_float(value) for value in flat.tolist()])
    return _float_format(flat.size) % tuple(flat.tolist())


# ---------------------------------------------------------------------------------------------
# The model file: .safetensors, Sequential(Linear, ReLU, ...) names (server.MlpWeights)
# ---------------------------------------------------------------------------------------------

def _malformed(name, problem):
    return ValueError(f"not a valid safetensors file: {name}: {problem}")


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {key} is given twice")
        seen[key] = value
    return seen


def parse_safetensors(data, name="(bytes)"):
    """A strict reader of F32 .safetensors bytes: {name: float32 ndarray}, in file order.

    The same checks as the Java reader (SafeTensors): the header fits, is a JSON object without
    duplicate keys, every tensor has only dtype, shape and data_offsets, is F32, its shape matches
    its byte range, and the ranges cover the data exactly, without overlaps or holes.
    """
    if len(data) < 8:
        raise _malformed(name, f"it has {len(data)} bytes, fewer than the 8 of its header length")
    (header_length,) = struct.unpack_from("<Q", data, 0)
    if header_length < 2 or header_length > MAX_HEADER_BYTES or header_length > len(data) - 8:
        raise _malformed(name, f"its header length {header_length} does not fit its {len(data)} bytes")
    try:
        header = json.loads(bytes(data[8:8 + header_length]).decode("utf-8"), object_pairs_hook=_no_duplicates,
                            parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise _malformed(name, f"its header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise _malformed(name, "its header is not a JSON object")
    data_start = 8 + header_length
    data_length = len(data) - data_start
    entries = []
    for tensor, info in header.items():
        if tensor == "__metadata__":
            if not isinstance(info, dict):
                raise _malformed(name, "__metadata__ is not an object")
            continue
        if not isinstance(info, dict):
            raise _malformed(name, f"tensor {tensor} is not described by an object")
        for key in info:
            if key not in ("dtype", "shape", "data_offsets"):
                raise _malformed(name, f"tensor {tensor} has an unknown key {key}")
        dtype = info.get("dtype")
        if dtype != "F32":
            shown = "without a dtype" if not isinstance(dtype, str) or not dtype else dtype
            raise _malformed(name, f"tensor {tensor} is {shown}; only F32 is supported")
        shape = info.get("shape")
        if not isinstance(shape, list):
            raise _malformed(name, f"tensor {tensor} has no shape array")
        for dim in shape:
            if not _is_int(dim) or dim < 0 or dim > INT_MAX:
                raise _malformed(name, f"tensor {tensor} has a bad dimension {_compact(dim)}")
        offsets = info.get("data_offsets")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets):
            raise _malformed(name, f"tensor {tensor} needs data_offsets [begin, end]")
        begin, end = offsets
        if begin < 0 or end < begin or end > data_length:
            raise _malformed(name, f"tensor {tensor} has bytes [{begin}, {end}) outside the {data_length} "
                                   "bytes of data")
        elements = math.prod(shape)
        if elements * 4 != end - begin:
            raise _malformed(name, f"tensor {tensor} of shape {_compact(shape)} needs {elements * 4} bytes but has "
                                   f"{end - begin}")
        entries.append((tensor, shape, begin, end))
    covered = 0
    for tensor, _, begin, end in sorted(entries, key=lambda e: e[2]):
        if begin != covered:
            raise _malformed(name, f"tensor {tensor} starts at byte {begin} but the tensors before it end at "
                                   f"{covered} (the data must be contiguous, without holes)")
        covered = end
    if covered != data_length:
        raise _malformed(name, f"its tensors cover {covered} of its {data_length} bytes of data")
    return {tensor: np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=data_start + begin)
            .astype(np.float32).reshape(shape)
            for tensor, shape, begin, end in entries}


def read_safetensors(path, reader="auto"):
    """The tensors of a file: through the safetensors package where it is installed (reader "auto" or
    "safetensors"), else through parse_safetensors ("builtin"). Either way only F32 is taken."""
    if reader in ("auto", "safetensors"):
        try:
            from safetensors import safe_open
        except ImportError:
            if reader == "safetensors":
                raise
        else:
            tensors = {}
            try:
                with safe_open(path, framework="numpy") as f:
                    for key in f.keys():
                        tensors[key] = f.get_tensor(key)
            except Exception as e:  # the package's own errors name the fault
                raise _malformed(path, str(e)) from None
            for key, value in tensors.items():
                if value.dtype != np.float32:
                    raise _malformed(path, f"tensor {key} is {value.dtype}; only F32 is supported")
            return tensors
    with open(path, "rb") as f:
        return parse_safetensors(f.read(), path)


def mlp_layers(tensors, name="model"):
    """[(weight [out, in], bias [out])] of Sequential(Linear, ReLU, ...): 0.weight, 0.bias, 2.weight, ..."""
    layers = []
    index = 0
    while f"{index}.weight" in tensors:
        weight = tensors[f"{index}.weight"]
        bias = tensors.get(f"{index}.bias")
        if weight.ndim != 2 or bias is None or bias.ndim != 1 or bias.shape[0] != weight.shape[0]:
            raise ValueError(f"{name}: layer {index} needs weight [out, in] and bias [out], got "
                             f"{list(weight.shape)} and {'none' if bias is None else list(bias.shape)}")
        if layers and layers[-1][0].shape[0] != weight.shape[1]:
            raise ValueError(f"{name}: layer {index} takes {weight.shape[1]} features but the layer before gives "
                             f"{layers[-1][0].shape[0]}")
        layers.append((weight, bias))
        index += 2
    if not layers:
        raise ValueError(f"{name}: no 0.weight, so no layers")
    if len(tensors) != 2 * len(layers):
        raise ValueError(f"{name}: {len(tensors) - 2 * len(layers)} tensor(s) are not layers of a "
                         "Sequential(Linear, ReLU, ...)")
    return layers


# ---------------------------------------------------------------------------------------------
# Batching: the queue, the batcher, and the padding (org.cudagraph4j.serving.InferenceEngine)
# ---------------------------------------------------------------------------------------------

class QueueFull(Exception):
    pass


class Pending:
    """One request in flight: its rows, its output, its future, and how many pieces are left."""

    __slots__ = ("data", "out", "future", "pieces_left")

    def __init__(self, data, output_width, future, pieces):
        self.data = data
        self.out = np.empty((data.shape[0], output_width), dtype=np.float32)
        self.future = future
        self.pieces_left = pieces


class Piece:
    __slots__ = ("request", "first", "rows")

    def __init__(self, request, first, rows):
        self.request = request
        self.first = first
        self.rows = rows


class BatchRunner:
    """Runs one batch on the worker thread: packs the pieces' rows into the input staging buffer, pads
    with zero rows up to the bucket, runs the bucket (step), and copies each piece's rows of the answer
    back into its request's output. Only a batch's own rows are read back; pad rows never leave."""

    def __init__(self, ladder, stage_in, step):
        self.ladder = ladder
        self.stage_in = stage_in  # [largest, in] float32, pinned on a GPU
        self.step = step          # step(bucket, rows) -> float32 [>= rows, out], valid until the next call

    def run(self, batch):
        rows = sum(piece.rows for piece in batch)
        bucket = self.ladder.bucket_for(rows)
        x = self.stage_in
        at = 0
        for piece in batch:
            x[at:at + piece.rows] = piece.request.data[piece.first:piece.first + piece.rows]
            at += piece.rows
        x[rows:bucket] = 0
        y = self.step(bucket, rows)
        at = 0
        for piece in batch:
            piece.request.out[piece.first:piece.first + piece.rows] = y[at:at + piece.rows]
            at += piece.rows
        return bucket


class Batcher:
    """The dynamic batcher, on the event loop: a bounded queue of pieces, one coroutine that gathers
    batches, and a worker thread (one) that runs them, at most `lanes` handed to it at once."""

    def __init__(self, ladder, output_width, runner, max_wait_s=200e-6, queue_capacity=4096, lanes=2,
                 executor=None):
        self.ladder = ladder
        self.output_width = output_width
        self.runner = runner
        self.max_wait_s = max_wait_s
        self.capacity = queue_capacity
        self.lanes = lanes
        self.executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpu")
        self.queue = collections.deque()
        self.unhealthy = None       # the exception that made the model unhealthy, if one did
        self.batches = 0
        self.rows_served = 0
        self.padded_rows = 0
        self.rejected = 0
        self._wakeup = None
        self._lane_free = None
        self._task = None

    def start(self):
        self._wakeup = asyncio.Event()
        self._lane_free = asyncio.Semaphore(self.lanes)
        self._task = asyncio.get_running_loop().create_task(self._gather())

    async def stop(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self.executor.shutdown(wait=True)

    def submit(self, data):
        """Queues [rows, in] float32; the future of [rows, out]. Raises QueueFull when it does not fit."""
        pieces = self.ladder.pieces(data.shape[0])
        if len(self.queue) + len(pieces) > self.capacity:
            self.rejected += 1
            raise QueueFull(f"the queue is full: {len(pieces)} piece(s) refused, capacity {self.capacity}")
        future = asyncio.get_running_loop().create_future()
        request = Pending(data, self.output_width, future, len(pieces))
        first = 0
        for rows in pieces:
            self.queue.append(Piece(request, first, rows))
            first += rows
        self._wakeup.set()
        return future

    def _take(self):
        """The next queued piece whose request still waits for it (not cancelled or timed out), or None."""
        while self.queue:
            piece = self.queue.popleft()
            if not piece.request.future.done():
                return piece
        return None

    async def _next(self, deadline):
        """The next piece, waiting until `deadline` (perf_counter seconds) at the latest; None when none came.

        uvloop's timers tick in milliseconds, so a wait shorter than 2 ms yields to the loop (which reads
        the sockets, so arriving requests join) until the deadline rather than sleeping on a timer."""
        while True:
            piece = self._take()
            if piece is not None:
                return piece
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            if remaining > 2e-3:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining - 1e-3)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)

    async def _gather(self):
        loop = asyncio.get_running_loop()
        largest = self.ladder.largest
        carried = None
        while True:
            first = carried
            carried = None
            while first is None:
                first = self._take()
                if first is None:
                    self._wakeup.clear()
                    await self._wakeup.wait()
            batch = [first]
            rows = first.rows
            deadline = time.perf_counter() + self.max_wait_s
            while rows < largest:
                piece = await self._next(deadline)
                if piece is None:
                    break
                if rows + piece.rows > largest:
                    carried = piece
                    break
                batch.append(piece)
                rows += piece.rows
            await self._lane_free.acquire()
            future = loop.run_in_executor(self.executor, self.runner.run, batch)
            future.add_done_callback(functools.partial(self._done, batch, rows))

    def _done(self, batch, rows, future):
        self._lane_free.release()
        failure = future.exception() if not future.cancelled() else asyncio.CancelledError()
        if failure is not None:
            if _is_cuda_error(failure):
                self.unhealthy = failure
            for piece in batch:
                if not piece.request.future.done():
                    piece.request.future.set_exception(failure)
            return
        bucket = future.result()
        self.batches += 1
        self.rows_served += rows
        self.padded_rows += bucket - rows
        for piece in batch:
            request = piece.request
            request.pieces_left -= 1
            if request.pieces_left == 0 and not request.future.done():
                request.future.set_result(request.out)


def _is_cuda_error(failure):
    text = f"{type(failure).__name__}: {failure}"
    return "CUDA" in text or "cuda" in text or "AcceleratorError" in text


# ---------------------------------------------------------------------------------------------
# The model on the device: eager on the CPU, or one CUDA graph per bucket
# ---------------------------------------------------------------------------------------------

class TorchModel:
    """Sequential(Linear, ReLU, ...) in FP32, with its buckets' graphs and staging buffers."""

    def __init__(self, layers, ladder, device="cuda"):
        import torch  # imported here so that the protocol and batching parts need only numpy
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.device = torch.device(device)
        self.ladder = ladder
        self.input_width = int(layers[0][0].shape[1])
        self.output_width = int(layers[-1][0].shape[0])
        modules = []
        for weight, bias in layers:
            linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
            modules += [linear, torch.nn.ReLU()]
        model = torch.nn.Sequential(*modules)
        model.load_state_dict({f"{2 * i}.{kind}": torch.from_numpy(np.ascontiguousarray(t))
                               for i, (weight, bias) in enumerate(layers)
                               for kind, t in (("weight", weight), ("bias", bias))}, strict=True)
        self.model = model.to(self.device).eval().requires_grad_(False)
        largest = ladder.largest
        cuda = self.device.type == "cuda"
        self.stage_in_t = torch.zeros(largest, self.input_width, pin_memory=cuda)
        self.stage_out_t = torch.zeros(largest, self.output_width, pin_memory=cuda)
        self.stage_in = self.stage_in_t.numpy()
        self.stage_out = self.stage_out_t.numpy()
        self.graphs = {}
        self.capture_seconds = 0.0
        if cuda:
            self._capture()

    def _capture(self):
        torch = self.torch
        started = time.perf_counter()
        self.stream = torch.cuda.Stream(self.device)
        self.static_in = torch.zeros(self.ladder.largest, self.input_width, device=self.device)
        self.static_out = {}
        pool = torch.cuda.graph_pool_handle()
        with torch.no_grad():
            self.stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self.stream):  # warm-up off the default stream, as torch.cuda.graph asks
                for bucket in self.ladder.sizes:
                    for _ in range(3):
                        self.model(self.static_in[:bucket])
            self.stream.synchronize()
            for bucket in reversed(self.ladder.sizes):  # largest first: the pool is sized once
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=pool, stream=self.stream):
                    self.static_out[bucket] = self.model(self.static_in[:bucket])
                self.graphs[bucket] = graph
        torch.cuda.synchronize(self.device)
        # Some graphs against eager on the same rows (mlp_torch.py's check): within 1e-4 of the largest output.
        probe = torch.rand(self.ladder.largest, self.input_width, device=self.device) - 0.5
        self.static_in.copy_(probe)
        for bucket in sorted({self.ladder.sizes[0], self.ladder.bucket_for(min(8, self.ladder.largest)),
                              self.ladder.largest}):
            with torch.no_grad():
                eager = self.model(probe[:bucket])
            self.graphs[bucket].replay()
            torch.cuda.synchronize(self.device)
            diff = (self.static_out[bucket] - eager).abs().max().item()
            if diff > 1e-4 * max(eager.abs().max().item(), 1e-6):
                raise RuntimeError(f"the graph of bucket {bucket} differs from eager by {diff}")
        self.capture_seconds = time.perf_counter() - started

    def step(self, bucket, rows):
        """Runs the first `bucket` rows of stage_in; the first `rows` rows of the answer, in stage_out."""
        torch = self.torch
        if not self.graphs:
            with torch.no_grad():
                self.stage_out_t[:rows] = self.model(self.stage_in_t[:bucket])[:rows]
            return self.stage_out
        with torch.cuda.stream(self.stream):
            self.static_in[:bucket].copy_(self.stage_in_t[:bucket], non_blocking=True)
            self.graphs[bucket].replay()
            self.stage_out_t[:rows].copy_(self.static_out[bucket][:rows], non_blocking=True)
        self.stream.synchronize()
        return self.stage_out

    def describe(self):
        torch = self.torch
        if self.device.type == "cuda":
            where = (f"{torch.cuda.get_device_name(self.device)}, {len(self.graphs)} CUDA graphs captured in "
                     f"{self.capture_seconds:.1f} s, TF32 off")
        else:
            where = "CPU, eager"
        return f"torch {torch.__version__}, {where}"


# ---------------------------------------------------------------------------------------------
# The HTTP server
# ---------------------------------------------------------------------------------------------

def _torch_version():
    """torch.__version__ (read from the installed package where torch is not imported yet), or "unknown"."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return str(torch.__version__)
    try:
        from importlib.metadata import version
        return str(version("torch"))
    except Exception:  # not installed
        return "unknown"


class Server:
    def __init__(self, name, protocol, batcher, max_body_bytes, answer_timeout_s=ANSWER_TIMEOUT_S):
        self.name = name
        self.protocol = protocol
        self.batcher = batcher
        self.max_body_bytes = max_body_bytes
        self.answer_timeout_s = answer_timeout_s
        self.shutting_down = False
        self.in_flight = set()  # the tasks of the inference requests being served

    def healthy(self):
        return self.batcher.unhealthy is None

    def ready(self):
        return self.healthy() and not self.shutting_down

    def app(self):
        from aiohttp import web
        self.web = web

        @web.middleware
        async def errors(request, handler):
            return await self._errors(request, handler)

        app = web.Application(client_max_size=self.max_body_bytes, middlewares=[errors])
        app.router.add_get("/v2", self.server_metadata)
        app.router.add_get("/v2/health/live", self.live)
        app.router.add_get("/v2/health/ready", self.ready_handler)
        for model in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
            app.router.add_get(model, self.metadata)
            app.router.add_get(model + "/ready", self.model_ready)
            app.router.add_post(model + "/infer", self.infer)
        return app

    def _json(self, status, body, headers=None):
        return self.web.Response(status=status, body=body, content_type="application/json", headers=headers)

    def _error(self, status, message, headers=None):
        return self._json(status, error_body(message), headers)

    async def _errors(self, request, handler):
        """Every answer is JSON: the router's 404 and 405 too, and a 500 for what a handler did not expect."""
        web = self.web
        try:
            return await handler(request)
        except web.HTTPMethodNotAllowed as e:
            allowed = sorted(m for m in e.allowed_methods if m != "HEAD") or sorted(e.allowed_methods)
            return self._error(405, f"{e.method} is not allowed on {request.path}; it takes {' or '.join(allowed)}",
                               {"Allow": ", ".join(allowed)})
        except web.HTTPNotFound:
            return self._error(404, f"no such endpoint: {request.method} {request.path}")
        except web.HTTPException as e:
            if e.status < 400:
                raise
            return self._error(e.status, e.text or e.reason)
        except Exception as e:  # a bug: still a JSON answer
            return self._error(500, f"{type(e).__name__}: {e}")

    def _unknown(self, request):
        """The 404 for a model or a version this server does not serve, or None."""
        name = request.match_info["name"]
        if name != self.name:
            return self._error(404, f'unknown model "{name}"; this server serves "{self.name}"')
        version = request.match_info.get("version")
        if version is not None and version != "1":
            return self._error(404, f'model "{self.name}" has no version "{version}"; its only version is "1"')
        return None

    async def server_metadata(self, request):
        return self._json(200, _compact({"name": "torch_server", "version": _torch_version(),
                                         "extensions": ["binary_tensor_data"]}).encode("utf-8"))

    async def live(self, request):
        return self._json(200, b'{"live":true}')

    async def ready_handler(self, request):
        ready = self.ready()
        return self._json(200 if ready else 503, b'{"ready":true}' if ready else b'{"ready":false}')

    async def metadata(self, request):
        return self._unknown(request) or self._json(200, self.protocol.metadata())

    async def model_ready(self, request):
        unknown = self._unknown(request)
        if unknown is not None:
            return unknown
        ready = self.ready()
        return self._json(200 if ready else 503, _compact({"name": self.name, "ready": ready}).encode("utf-8"))

    async def infer(self, request):
        unknown = self._unknown(request)
        if unknown is not None:
            return unknown
        if self.shutting_down:
            return self._error(503, "the server is shutting down")
        task = asyncio.current_task()
        self.in_flight.add(task)
        try:
            return await self._infer(request)
        finally:
            self.in_flight.discard(task)

    async def _infer(self, request):
        web = self.web
        declared = request.content_length
        if declared is not None and declared > self.max_body_bytes:
            return self._error(413, f"the request body of {declared} bytes is over the limit of "
                                    f"{self.max_body_bytes}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._error(413, f"the request body is over the limit of {self.max_body_bytes} bytes")
        try:
            parsed = self.protocol.parse(body, request.headers.get(HEADER_LENGTH))
        except ProtocolError as e:
            return self._error(e.status, e.message)
        if not self.healthy():
            return self._error(503, "the model is not ready")
        try:
            future = self.batcher.submit(parsed.data)
        except QueueFull as e:
            return self._error(503, str(e))
        try:
            output = await asyncio.wait_for(future, self.answer_timeout_s)
        except asyncio.TimeoutError:
            return self._error(503, f"no answer within {self.answer_timeout_s:g} s")
        except Exception as e:  # the batch failed on the device
            if self.batcher.unhealthy is not None:
                return self._error(503, f"the model is unhealthy: {e}")
            return self._error(500, f"{type(e).__name__}: {e}")
        json_part, binary = self.protocol.response(parsed, output)
        if not binary:
            return self._json(200, json_part)
        return web.Response(status=200, body=json_part + binary,
                            headers={HEADER_LENGTH: str(len(json_part)), "Content-Type": "application/octet-stream"})

    async def drain(self, timeout_s):
        """Waits until no inference request is in flight, timeout_s at most, then cancels those left (their
        clients see the connection close); how many it cancelled. New requests get a 503 meanwhile."""
        self.shutting_down = True
        deadline = time.perf_counter() + timeout_s
        while self.in_flight and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        left = list(self.in_flight)
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=1.0)  # let them unwind
        return len(left)


async def serve(args):
    from aiohttp import web
    tensors = read_safetensors(args.model, args.reader)
    layers = mlp_layers(tensors, args.model)
    ladder = Ladder(default_ladder(args.largest_bucket))
    model = TorchModel(layers, ladder, args.device)
    protocol = Protocol(args.name, model.input_width, model.output_width, max_rows=args.max_rows,
                        max_elements=args.max_elements)
    batcher = Batcher(ladder, model.output_width, BatchRunner(ladder, model.stage_in, model.step),
                      max_wait_s=args.max_wait_us * 1e-6, queue_capacity=args.queue_capacity, lanes=args.lanes)
    server = Server(args.name, protocol, batcher, args.max_body_bytes)
    batcher.start()
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, backlog=4096, reuse_address=True)
    await site.start()
    host, port = runner.addresses[0][:2]
    print(f"serving {args.name} on http://{host}:{port} ({model.describe()}, buckets {ladder.sizes[0]}.."
          f"{ladder.largest} ({len(ladder.sizes)}), max wait {args.max_wait_us:g} us, queue "
          f"{args.queue_capacity}, lanes {args.lanes})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    await stop.wait()
    # Graceful: not ready and no new requests from now on; those in flight get up to --shutdown-timeout-s.
    in_flight = len(server.in_flight)
    cut_off = await server.drain(args.shutdown_timeout_s)
    if in_flight:
        print(f"shutting down: {in_flight - cut_off} request(s) in flight finished, {cut_off} cut off after "
              f"{args.shutdown_timeout_s:g} s", file=sys.stderr, flush=True)
    await runner.cleanup()
    await batcher.stop()
    print(f"stopped: {batcher.batches} batches, {batcher.rows_served} rows, {batcher.padded_rows} pad rows, "
          f"{batcher.rejected} refused", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the .safetensors file")
    parser.add_argument("--name", default="mlp")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-wait-us", type=float, default=200.0, help="ServingOptions.defaults().maxWait()")
    parser.add_argument("--queue-capacity", type=int, default=4096, help="pieces; ServingOptions.defaults()")
    parser.add_argument("--lanes", type=int, default=2, help="batches handed to the GPU thread at once")
    parser.add_argument("--largest-bucket", type=int, default=256)
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES, help="a larger body is a 413")
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS, help="rows per request; more is a 400")
    parser.add_argument("--max-elements", type=int, default=MAX_ELEMENTS,
                        help="input values (rows * width) per request; more is a 400")
    parser.add_argument("--shutdown-timeout-s", type=float, default=SHUTDOWN_TIMEOUT_S,
                        help="on SIGTERM or SIGINT, how long the requests in flight may take to finish")
    parser.add_argument("--device", default="cuda", help="cuda (graphs) or cpu (eager, for tests)")
    parser.add_argument("--reader", default="auto", choices=("auto", "safetensors", "builtin"))
    parser.add_argument("--gil-switch-ms", type=float, default=0.5,
                        help="sys.setswitchinterval: how long the GPU thread may wait for the GIL while the event "
                             "loop is busy (Python's default is 5 ms)")
    args = parser.parse_args(argv)
    if (args.queue_capacity < 1 or args.lanes < 1 or args.max_wait_us < 0 or args.gil_switch_ms <= 0
            or args.max_body_bytes < 1 or args.max_rows < 1 or args.max_elements < 1
            or not args.shutdown_timeout_s >= 0):
        parser.error("--queue-capacity, --lanes, --max-body-bytes, --max-rows and --max-elements must be at least 1, "
                     "--max-wait-us and --shutdown-timeout-s not negative, --gil-switch-ms positive")
    sys.setswitchinterval(args.gil_switch_ms / 1e3)
    try:
        import uvloop
    except ImportError:
        uvloop = None
        print("torch_server: uvloop is not installed; using asyncio's own loop", file=sys.stderr)
    try:
        if uvloop is not None and hasattr(uvloop, "run"):
            uvloop.run(serve(args))
        else:
            if uvloop is not None:
                uvloop.install()
            asyncio.run(serve(args))
    except (ValueError, OSError) as e:
        print(f"torch_server: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
