#!/usr/bin/env python3
"""Tests of torch_server.py. The protocol, the safetensors reader, the ladder, the padding and the
batcher need only numpy; the HTTP tests need aiohttp and the model tests torch, and are skipped
without them.

    python3 test_torch_server.py        (or: python3 -m unittest test_torch_server)

With CG4J_JAVA_FIXTURE=DIR (a model.safetensors written by the Java MlpWeights, and expected.json
with input rows and the Java CPU forward's output), the reader is also checked on the Java file.
"""
import asyncio
import contextlib
import io
import json
import math
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_server as ts  # noqa: E402


_UNSET = object()


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def encode_safetensors(tensors, metadata=None, pad=True):
    """The layout of the reference writer (and of the Java SafeTensors.encode)."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
        blobs.append(array.tobytes())
    raw = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def raw_file(header, data=b""):
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(raw)) + raw + data


def mlp_forward(layers, x):
    for weight, bias in layers:
        x = np.maximum(x.astype(np.float64) @ weight.T.astype(np.float64) + bias, 0)
    return x


def random_layers(width=8, count=3, seed=1):
    rng = np.random.default_rng(seed)
    bound = math.sqrt(6.0 / width)
    return [(rng.uniform(-bound, bound, (width, width)).astype(np.float32),
             rng.uniform(-0.1, 0.1, width).astype(np.float32)) for _ in range(count)]


class LadderTest(unittest.TestCase):
    def test_default_ladder_is_the_engines(self):
        sizes = ts.default_ladder()
        self.assertEqual(sizes[:5], [1, 2, 4, 8, 16])
        self.assertEqual(sizes[-1], 256)
        self.assertEqual(len(sizes), 35)

    def test_a_batch_runs_on_the_smallest_bucket_that_holds_it(self):
        ladder = ts.Ladder(ts.default_ladder())
        for rows, bucket in ((1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16), (17, 24), (255, 256), (256, 256)):
            self.assertEqual(ladder.bucket_for(rows), bucket, rows)
        for rows in (0, 257):
            with self.assertRaises(ValueError):
                ladder.bucket_for(rows)

    def test_a_request_above_the_largest_bucket_is_split_in_order(self):
        ladder = ts.Ladder(ts.default_ladder())
        self.assertEqual(ladder.pieces(1), [1])
        self.assertEqual(ladder.pieces(256), [256])
        self.assertEqual(ladder.pieces(257), [256, 1])
        self.assertEqual(ladder.pieces(600), [256, 256, 88])
        with self.assertRaises(ValueError):
            ladder.pieces(0)


class ProtocolTest(unittest.TestCase):
    def setUp(self):
        self.protocol = ts.Protocol("mlp", 4, 3)

    def parse(self, body, header=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        return self.protocol.parse(body, header)

    def refused(self, body, header=None):
        with self.assertRaises(ts.ProtocolError) as caught:
            self.parse(body, header)
        self.assertEqual(caught.exception.status, 400)
        return caught.exception.message

    @staticmethod
    def request(**tensor):
        base = {"name": "input", "datatype": "FP32", "shape": [2, 4]}
        base.update(tensor)
        return {"inputs": [base]}

    def test_flat_and_nested_json_give_the_same_rows(self):
        flat = self.parse(self.request(data=[1, 2, 3, 4, -1, 0.5, 2, 8]))
        nested = self.parse(self.request(data=[[1, 2, 3, 4], [-1, 0.5, 2, 8]]))
        ragged = self.parse(self.request(data=[[1, 2, 3], [4, -1, 0.5, 2, 8]]))  # the Java reader counts values
        for parsed in (flat, nested, ragged):
            self.assertEqual(parsed.rows, 2)
            self.assertEqual(parsed.data.dtype, np.float32)
            np.testing.assert_array_equal(parsed.data, [[1, 2, 3, 4], [-1, 0.5, 2, 8]])
        self.assertFalse(flat.binary_output)
        self.assertIsNone(flat.id)

    def test_id_and_binary_output_are_taken_as_the_java_server_takes_them(self):
        body = self.request(data=[0] * 8)
        body["id"] = "r1"
        body["parameters"] = {"binary_data_output": True}
        parsed = self.parse(body)
        self.assertEqual(parsed.id, "r1")
        self.assertTrue(parsed.binary_output)
        body = self.request(data=[0] * 8)
        body["id"] = 7
        body["outputs"] = [{"name": "output", "parameters": {"binary_data": True}}]
        parsed = self.parse(body)
        self.assertIsNone(parsed.id)
        self.assertTrue(parsed.binary_output)

    def test_binary_tensor_data(self):
        rows = np.array([[1, 2, 3, 4], [5, 6, 7, 8.5]], dtype="<f4")
        head = json.dumps(self.request(parameters={"binary_data_size": 32})).encode()
        parsed = self.parse(head + rows.tobytes(), str(len(head)))
        np.testing.assert_array_equal(parsed.data, rows)
        self.assertTrue(parsed.data.flags.writeable)

    def test_every_malformed_request_is_a_400_with_the_java_servers_message(self):
        cases = [
            ("[1,2]", "the request must be a JSON object"),
            ({"inputs": []}, 'the request needs exactly one input, "input"'),
            ({"inputs": [{"datatype": "FP32"}]}, 'unknown input (no name); the model\'s input is "input"'),
            ({"inputs": [{"name": "x"}]}, 'unknown input "x"; the model\'s input is "input"'),
            (self.request(datatype="FP16"), 'input "input" must be FP32, not FP16'),
            ({"inputs": [{"name": "input"}]}, 'input "input" must be FP32, not null'),
            ({"inputs": [{"name": "input", "datatype": "FP32"}]}, 'input "input" needs shape [n, 4], got '),
            (self.request(shape=[2, 4, 1]), 'input "input" needs shape [n, 4], got [2,4,1]'),
            (self.request(shape=[2.0, 4]), 'input "input" needs shape [n, 4], got [2.0,4]'),
            (self.request(shape=[True, 4]), 'input "input" needs shape [n, 4], got [true,4]'),
            (self.request(shape=[2 ** 31, 4]), 'input "input" needs shape [n, 4], got [2147483648,4]'),
            (self.request(shape=[0, 4], data=[]), 'input "input" needs shape [n, 4] with n >= 1, got [0,4]'),
            (self.request(shape=[2, 5]), 'input "input" needs shape [n, 4] with n >= 1, got [2,5]'),
            (self.request(), 'input "input" has no data array (or binary_data_size)'),
            (self.request(data=[1] * 7), 'input "input" of shape [2,4] needs 8 values, got 7'),
            (self.request(data=[[1] * 4, [1] * 5]), 'input "input" of shape [2,4] needs 8 values, got 9'),
            (self.request(data=[1] * 7 + ["a"]), 'input "input" holds a value that is not a number: "a"'),
            (self.request(data=[1] * 7 + [True]), 'input "input" holds a value that is not a number: true'),
            (self.request(data=[[1] * 4, [1, 1, 1, None]]), 'input "input" holds a value that is not a number: null'),
            (self.request(data=[1] * 7 + [1e39]), 'input "input" holds a value that is not finite'),
            (self.request(data=[1] * 7 + [10 ** 400]), 'input "input" holds a value that is not finite'),
            (self.request(parameters={"binary_data_size": 32}), "binary_data_size needs the "
                                                                 "Inference-Header-Content-Length header"),
        ]
        for body, message in cases:
            with self.subTest(body=body):
                self.assertEqual(self.refused(body), message)
        self.assertTrue(self.refused("{").startswith("malformed JSON: "))
        self.assertTrue(self.refused('{"inputs": NaN}').startswith("malformed JSON: "))
        self.assertTrue(self.refused(b"\xff\xfe").startswith("malformed JSON: "))

    def test_binary_framing_errors(self):
        head = json.dumps(self.request(parameters={"binary_data_size": 32})).encode()
        body = head + bytes(32)
        self.assertEqual(self.refused(body, "x"), "Inference-Header-Content-Length is not a number: x")
        self.assertEqual(self.refused(body, "1_0"), "Inference-Header-Content-Length is not a number: 1_0")
        self.assertEqual(self.refused(body, str(len(body) + 1)),
                         f"Inference-Header-Content-Length {len(body) + 1} is outside the body's {len(body)} bytes")
        self.assertEqual(self.refused(head + bytes(28), str(len(head))),
                         'input "input" of shape [2,4] needs 32 bytes of binary data; binary_data_size says 32 and '
                         'the body holds 28')
        head = json.dumps(self.request(parameters={"binary_data_size": 28})).encode()
        self.assertEqual(self.refused(head + bytes(28), str(len(head))),
                         'input "input" of shape [2,4] needs 32 bytes of binary data; binary_data_size says 28 and '
                         'the body holds 28')
        head = json.dumps(self.request(parameters={"binary_data_size": 32})).encode()
        nan = np.full(8, np.nan, dtype="<f4").tobytes()
        self.assertEqual(self.refused(head + nan, str(len(head))), 'input "input" holds a value that is not finite')

    def test_outputs_must_be_a_list_of_the_models_output(self):
        cases = [
            ({"output": {}}, '"outputs" must be a list of output tensors, got {"output":{}}'),
            ("output", '"outputs" must be a list of output tensors, got "output"'),
            (1, '"outputs" must be a list of output tensors, got 1'),
            (False, '"outputs" must be a list of output tensors, got false'),
            ([1], 'each entry of "outputs" must be an object, got 1'),
            (["output"], 'each entry of "outputs" must be an object, got "output"'),
            ([["output"]], 'each entry of "outputs" must be an object, got ["output"]'),
            ([None], 'each entry of "outputs" must be an object, got null'),
            ([{"name": "x"}], 'unknown output "x"; the model\'s output is "output"'),
            ([{"name": "output"}, {"name": "y"}], 'unknown output "y"; the model\'s output is "output"'),
            ([{}], 'unknown output (no name); the model\'s output is "output"'),
            ([{"name": None}], 'unknown output (no name); the model\'s output is "output"'),
            ([{"name": 5}], 'unknown output (no name); the model\'s output is "output"'),
            ([{"parameters": {"binary_data": True}}], 'unknown output (no name); the model\'s output is "output"'),
        ]
        for outputs, message in cases:
            with self.subTest(outputs=outputs):
                self.assertEqual(self.refused(dict(self.request(data=[0] * 8), outputs=outputs)), message)
        for outputs in (None, [], [{"name": "output"}], [{"name": "output", "parameters": None}]):
            with self.subTest(outputs=outputs):
                self.assertFalse(self.parse(dict(self.request(data=[0] * 8), outputs=outputs)).binary_output)

    def test_the_outputs_binary_data_decides_over_binary_data_output(self):
        def binary(request_level, output_parameters):
            body = self.request(data=[0] * 8)
            if request_level is not _UNSET:
                body["parameters"] = {"binary_data_output": request_level}
            if output_parameters is not _UNSET:
                body["outputs"] = [{"name": "output", "parameters": output_parameters}]
            return self.parse(body).binary_output

        self.assertFalse(binary(_UNSET, _UNSET))                          # the default: JSON
        self.assertTrue(binary(True, _UNSET))
        self.assertFalse(binary(False, _UNSET))
        self.assertTrue(binary(False, {"binary_data": True}))             # the output's own setting decides
        self.assertFalse(binary(True, {"binary_data": False}))
        self.assertTrue(binary(_UNSET, {"binary_data": True}))
        self.assertFalse(binary(_UNSET, {"binary_data": False}))
        self.assertTrue(binary(True, {"binary_data": None}))              # null: as if not given
        self.assertTrue(binary(True, {}))
        self.assertTrue(binary(True, None))
        self.assertFalse(binary(False, {"binary_data": None}))
        self.assertTrue(binary(False, {"binary_data": "true"}))           # Jackson's asBoolean leniency
        self.assertTrue(binary(False, {"binary_data": 1}))
        self.assertFalse(binary(True, {"binary_data": "yes"}))
        self.assertFalse(binary(True, {"binary_data": 0}))
        self.assertTrue(binary("true", _UNSET))
        self.assertTrue(binary(2, _UNSET))

    def test_rows_and_values_over_the_limits_are_refused_before_the_data_is_read(self):
        self.assertEqual(self.refused(self.request(shape=[5000, 4])),
                         'input "input" has 5000 rows, over the limit of 4096 rows per request (--max-rows)')
        self.assertEqual(self.parse(self.request(shape=[4096, 4], data=[0] * 4 * 4096)).rows, 4096)
        wide = ts.Protocol("mlp", 512, 3)
        body = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [4194305, 512]}]}).encode()
        with self.assertRaises(ts.ProtocolError) as caught:
            wide.parse(body, None)
        self.assertEqual(caught.exception.message, 'input "input" has 4194305 rows, over the limit of 4096 rows per '
                                                   'request (--max-rows)')
        many_rows = ts.Protocol("mlp", 512, 3, max_rows=1 << 30)
        with self.assertRaises(ts.ProtocolError) as caught:  # no data at all: refused on the shape alone
            many_rows.parse(body, None)
        self.assertEqual(caught.exception.message, 'input "input" of shape [4194305,512] holds 2147484160 values, '
                                                   'over the limit of 4194304 per request (--max-elements)')
        small = ts.Protocol("mlp", 4, 3, max_rows=8, max_elements=16)
        with self.assertRaises(ts.ProtocolError) as caught:
            small.parse(json.dumps(self.request(shape=[9, 4], data=[0] * 36)).encode(), None)
        self.assertEqual((caught.exception.status, caught.exception.message),
                         (400, 'input "input" has 9 rows, over the limit of 8 rows per request (--max-rows)'))
        with self.assertRaises(ts.ProtocolError) as caught:
            small.parse(json.dumps(self.request(shape=[5, 4], data=[0] * 20)).encode(), None)
        self.assertEqual(caught.exception.message, 'input "input" of shape [5,4] holds 20 values, over the limit of '
                                                   '16 per request (--max-elements)')
        self.assertEqual(small.parse(json.dumps(self.request(shape=[4, 4], data=[0] * 16)).encode(), None).rows, 4)
        head = json.dumps(self.request(shape=[5, 4], parameters={"binary_data_size": 80})).encode()
        with self.assertRaises(ts.ProtocolError) as caught:  # binary data too
            small.parse(head + bytes(80), str(len(head)))
        self.assertIn("over the limit of 16 per request (--max-elements)", caught.exception.message)
        # the limits come right after the shape check, before the framing and the data checks
        self.assertIn("--max-rows", self.refused(self.request(shape=[5000, 4], parameters={"binary_data_size": 1})))
        self.assertIn("--max-rows", self.refused(self.request(shape=[5000, 4], data=["a"])))

    def test_json_response_reads_back_the_same_float32_values(self):
        parsed = self.parse(self.request(data=[0] * 8))
        parsed.id = "r9"
        output = np.array([[1.0, -0.0, 3.4028235e38], [1e-45, 0.1, 123456.789]], dtype=np.float32)
        body, binary = self.protocol.response(parsed, output)
        self.assertEqual(binary, b"")
        answer = json.loads(body)
        self.assertEqual(answer["model_name"], "mlp")
        self.assertEqual(answer["model_version"], "1")
        self.assertEqual(answer["id"], "r9")
        tensor = answer["outputs"][0]
        self.assertEqual((tensor["name"], tensor["datatype"], tensor["shape"]), ("output", "FP32", [2, 3]))
        np.testing.assert_array_equal(np.array(tensor["data"], dtype=np.float32), output.ravel())

    def test_binary_response(self):
        parsed = self.parse(self.request(data=[0] * 8, parameters=None))
        parsed.binary_output = True
        output = np.arange(6, dtype=np.float32).reshape(2, 3)
        body, binary = self.protocol.response(parsed, output)
        answer = json.loads(body)
        self.assertEqual(answer["outputs"][0]["parameters"], {"binary_data_size": 24})
        self.assertNotIn("data", answer["outputs"][0])
        np.testing.assert_array_equal(np.frombuffer(binary, dtype="<f4"), output.ravel())

    def test_metadata(self):
        metadata = json.loads(self.protocol.metadata())
        self.assertEqual(metadata["name"], "mlp")
        self.assertEqual(metadata["inputs"], [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}])
        self.assertEqual(metadata["outputs"], [{"name": "output", "datatype": "FP32", "shape": [-1, 3]}])

    def test_float_formatting_round_trips_every_float32(self):
        rng = np.random.default_rng(3)
        values = np.concatenate([rng.standard_normal(5000).astype(np.float32),
                                 (rng.standard_normal(2000) * 1e30).astype(np.float32),
                                 (rng.standard_normal(2000) * 1e-30).astype(np.float32),
                                 np.array([0, -0.0, 1.4e-45, 3.4028235e38, 16777217], dtype=np.float32)])
        text = ts.format_floats(values)
        back = np.array([float(v) for v in text.split(",")], dtype=np.float64).astype(np.float32)
        np.testing.assert_array_equal(back, values)
        self.assertEqual(ts.format_floats(np.zeros(0, dtype=np.float32)), "")
        self.assertEqual(json.loads("[" + ts.format_floats(np.array([np.inf, 1], dtype=np.float32)) + "]"),
                         ["Infinity", 1.0])

    def test_non_finite_outputs_are_written_as_jacksons_strings_never_as_bare_tokens(self):
        values = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, 3.4028235e38], dtype=np.float32)
        self.assertEqual(ts.format_floats(values), '"NaN","Infinity","-Infinity",1.5,-0,3.40282347e+38')
        self.assertEqual(ts.format_floats(values[3:]), "1.5,-0,3.40282347e+38")  # the all-finite path
        parsed = self.parse(self.request(data=[0] * 8))
        body, binary = self.protocol.response(parsed, values.reshape(2, 3))
        self.assertEqual(binary, b"")
        answer = json.loads(body, parse_constant=ts._refuse_constant)  # strict JSON: no NaN or Infinity tokens
        data = answer["outputs"][0]["data"]
        self.assertEqual(data[:3], ["NaN", "Infinity", "-Infinity"])
        np.testing.assert_array_equal(np.array(data[3:], dtype=np.float32), values[3:])
        parsed.binary_output = True
        body, binary = self.protocol.response(parsed, values.reshape(2, 3))  # binary keeps the float32 bits
        np.testing.assert_array_equal(np.frombuffer(binary, dtype="<f4"), values)


class CommandLineTest(unittest.TestCase):
    def main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as caught:
            ts.main(list(argv))
        return caught.exception.code, out.getvalue(), err.getvalue()

    def test_help_lists_the_limits_and_an_unknown_or_bad_option_exits_2(self):
        code, out, _ = self.main("--help")
        self.assertEqual(code, 0)
        for option in ("--max-body-bytes", "--max-rows", "--max-elements", "--shutdown-timeout-s"):
            self.assertIn(option, out)
        code, _, err = self.main("--model", "m.safetensors", "--no-such-option")
        self.assertEqual(code, 2)
        self.assertIn("unrecognized arguments: --no-such-option", err)
        self.assertEqual(self.main("--max-rows", "8")[0], 2)  # --model is required
        for bad in (("--max-rows", "0"), ("--max-elements", "0"), ("--max-body-bytes", "0"),
                    ("--shutdown-timeout-s", "-1"), ("--max-rows", "many")):
            with self.subTest(bad=bad):
                self.assertEqual(self.main("--model", "m.safetensors", *bad)[0], 2)


class SafeTensorsTest(unittest.TestCase):
    def test_reads_what_the_reference_layout_writes(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.array([1.5, -2], dtype=np.float32)
        tensors = ts.parse_safetensors(encode_safetensors({"0.weight": a, "0.bias": b}, {"format": "pt"}))
        self.assertEqual(list(tensors), ["0.weight", "0.bias"])
        np.testing.assert_array_equal(tensors["0.weight"], a)
        np.testing.assert_array_equal(tensors["0.bias"], b)
        self.assertEqual(tensors["0.weight"].dtype, np.float32)

    def test_every_malformed_file_is_refused_with_its_fault(self):
        ok = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
        cases = [
            (b"\x01\x00", "fewer than the 8 of its header length"),
            (struct.pack("<Q", 1 << 40) + b"{}", "does not fit"),
            (struct.pack("<Q", 1) + b"{", "does not fit"),
            (raw_file(b"{nope}"), "its header is not JSON"),
            (raw_file([1, 2]), "its header is not a JSON object"),
            (raw_file(b'{"a": 1, "a": 2}'), "given twice"),
            (raw_file({"__metadata__": "x"}), "__metadata__ is not an object"),
            (raw_file({"t": 3}), "tensor t is not described by an object"),
            (raw_file({"t": dict(ok, extra=1)}, bytes(8)), "tensor t has an unknown key extra"),
            (raw_file({"t": dict(ok, dtype="F16")}, bytes(8)), "tensor t is F16; only F32 is supported"),
            (raw_file({"t": {"shape": [2], "data_offsets": [0, 8]}}, bytes(8)), "tensor t is without a dtype"),
            (raw_file({"t": dict(ok, shape=2)}, bytes(8)), "tensor t has no shape array"),
            (raw_file({"t": dict(ok, shape=[-2])}, bytes(8)), "tensor t has a bad dimension -2"),
            (raw_file({"t": dict(ok, shape=[2.0])}, bytes(8)), "tensor t has a bad dimension 2.0"),
            (raw_file({"t": dict(ok, data_offsets=[0])}, bytes(8)), "tensor t needs data_offsets [begin, end]"),
            (raw_file({"t": dict(ok, data_offsets=[0, 16])}, bytes(8)), "outside the 8 bytes of data"),
            (raw_file({"t": dict(ok, shape=[3])}, bytes(8)), "tensor t of shape [3] needs 12 bytes but has 8"),
            (raw_file({"t": dict(ok, data_offsets=[4, 12])}, bytes(12)), "starts at byte 4 but the tensors before "
                                                                          "it end at 0"),
            (raw_file({"t": ok, "u": ok}, bytes(8)), "tensor u starts at byte 0 but the tensors before it end at 8"),
            (raw_file({"t": ok}, bytes(12)), "its tensors cover 8 of its 12 bytes of data"),
        ]
        for data, fault in cases:
            with self.subTest(fault=fault):
                with self.assertRaises(ValueError) as caught:
                    ts.parse_safetensors(data, "m.safetensors")
                self.assertIn("not a valid safetensors file: m.safetensors: ", str(caught.exception))
                self.assertIn(fault, str(caught.exception))

    def test_mlp_layers_chain_and_refuse_what_is_not_a_sequential(self):
        layers = random_layers(4, 2)
        tensors = {"0.weight": layers[0][0], "0.bias": layers[0][1], "2.weight": layers[1][0], "2.bias": layers[1][1]}
        self.assertEqual(len(ts.mlp_layers(tensors)), 2)
        with self.assertRaisesRegex(ValueError, "no 0.weight"):
            ts.mlp_layers({"1.weight": layers[0][0]})
        with self.assertRaisesRegex(ValueError, "layer 0 needs weight"):
            ts.mlp_layers({"0.weight": layers[0][0]})
        with self.assertRaisesRegex(ValueError, "layer 2 takes 3 features but the layer before gives 4"):
            ts.mlp_layers(dict(tensors, **{"2.weight": np.zeros((4, 3), np.float32)}))
        with self.assertRaisesRegex(ValueError, "1 tensor\\(s\\) are not layers"):
            ts.mlp_layers(dict(tensors, extra=np.zeros(1, np.float32)))

    def test_read_through_both_readers(self):
        import tempfile
        layers = random_layers(4, 2)
        tensors = {"0.weight": layers[0][0], "0.bias": layers[0][1], "2.weight": layers[1][0], "2.bias": layers[1][1]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.safetensors")
            with open(path, "wb") as f:
                f.write(encode_safetensors(tensors))
            readers = ["builtin", "auto"] + (["safetensors"] if have("safetensors") else [])
            for reader in readers:
                read = ts.read_safetensors(path, reader)
                for key, value in tensors.items():
                    np.testing.assert_array_equal(read[key], value)

    @unittest.skipUnless(os.environ.get("CG4J_JAVA_FIXTURE"), "CG4J_JAVA_FIXTURE names no Java-written model")
    def test_a_model_the_java_generator_wrote_computes_what_the_java_cpu_forward_computes(self):
        folder = os.environ["CG4J_JAVA_FIXTURE"]
        expected = json.load(open(os.path.join(folder, "expected.json")))
        readers = ["builtin"] + (["safetensors"] if have("safetensors") else [])
        for reader in readers:
            layers = ts.mlp_layers(ts.read_safetensors(os.path.join(folder, "model.safetensors"), reader))
            x = np.array(expected["input"], dtype=np.float32).reshape(expected["rows"], -1)
            y = mlp_forward(layers, x)
            want = np.array(expected["output"], dtype=np.float64).reshape(y.shape)
            self.assertLessEqual(np.abs(y - want).max(), 1e-5 * max(np.abs(want).max(), 1e-6), reader)


class PaddingTest(unittest.TestCase):
    def test_each_request_gets_exactly_its_rows_and_pad_rows_are_zero_and_dropped(self):
        ladder = ts.Ladder([1, 2, 4, 8])
        width, out_width = 3, 2
        weight = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
        stage_in = np.full((8, width), 99, dtype=np.float32)   # garbage from an earlier batch
        stage_out = np.full((8, out_width), -7, dtype=np.float32)
        seen = []

        def step(bucket, rows):
            seen.append((bucket, rows))
            self.assertTrue((stage_in[rows:bucket] == 0).all(), "pad rows must be zero")
            # row r's answer depends on row r alone, and pad rows answer 1000: a leak would show
            stage_out[:bucket] = stage_in[:bucket] @ weight
            stage_out[rows:bucket] = 1000
            return stage_out

        runner = ts.BatchRunner(ladder, stage_in, step)
        rng = np.random.default_rng(0)
        requests = [ts.Pending(rng.standard_normal((n, width)).astype(np.float32), out_width, None, 1)
                    for n in (1, 3, 1)]
        batch = [ts.Piece(r, 0, r.data.shape[0]) for r in requests]
        self.assertEqual(runner.run(batch), 8)
        self.assertEqual(seen, [(8, 5)])
        for r in requests:
            np.testing.assert_allclose(r.out, r.data @ weight, rtol=1e-6)
        # a request split in pieces: each piece fills its own rows
        big = ts.Pending(rng.standard_normal((11, width)).astype(np.float32), out_width, None, 2)
        runner.run([ts.Piece(big, 0, 8)])
        runner.run([ts.Piece(big, 8, 3)])
        np.testing.assert_allclose(big.out, big.data @ weight, rtol=1e-6)
        self.assertEqual(seen[-1], (4, 3))


class FakeRunner:
    """Computes x @ W on the worker thread and records each batch's piece sizes."""

    def __init__(self, width=3, gate=None):
        self.weight = np.arange(width * 2, dtype=np.float32).reshape(width, 2) - 1
        self.batches = []
        self.gate = gate
        self.fail_with = None

    def run(self, batch):
        if self.gate is not None:
            self.gate.wait(5)
        self.batches.append([p.rows for p in batch])
        if self.fail_with is not None:
            raise self.fail_with
        for p in batch:
            p.request.out[p.first:p.first + p.rows] = p.request.data[p.first:p.first + p.rows] @ self.weight
        return sum(p.rows for p in batch)


class BatcherTest(unittest.TestCase):
    def run_async(self, coroutine):
        return asyncio.run(asyncio.wait_for(coroutine, 20))

    def rows(self, n, seed=0):
        return np.random.default_rng(seed).standard_normal((n, 3)).astype(np.float32)

    def test_requests_that_arrive_together_share_batches_up_to_the_largest_bucket(self):
        runner = FakeRunner()

        async def scenario():
            batcher = ts.Batcher(ts.Ladder(ts.default_ladder()), 2, runner, max_wait_s=0.05)
            batcher.start()
            data = [self.rows(1, i) for i in range(300)]
            futures = [batcher.submit(d) for d in data]
            results = await asyncio.gather(*futures)
            await batcher.stop()
            for d, r in zip(data, results):
                np.testing.assert_allclose(r, d @ runner.weight, rtol=1e-6)
            return batcher

        batcher = self.run_async(scenario())
        self.assertEqual([sum(b) for b in runner.batches], [256, 44])
        self.assertEqual(batcher.rows_served, 300)

    def test_a_large_request_is_chunked_and_joined_in_order_and_a_piece_that_does_not_fit_waits(self):
        runner = FakeRunner()

        async def scenario():
            batcher = ts.Batcher(ts.Ladder(ts.default_ladder()), 2, runner, max_wait_s=0.05)
            batcher.start()
            big, a, b = self.rows(600, 1), self.rows(200, 2), self.rows(100, 3)
            results = await asyncio.gather(batcher.submit(big), batcher.submit(a), batcher.submit(b))
            await batcher.stop()
            for d, r in zip((big, a, b), results):
                self.assertEqual(r.shape, (d.shape[0], 2))
                np.testing.assert_allclose(r, d @ runner.weight, rtol=1e-6)

        self.run_async(scenario())
        # 600 -> 256, 256, 88; then 88 + 200 > 256, so 200 waits for the next batch, with 100 after it
        self.assertEqual(runner.batches, [[256], [256], [88], [200], [100]])

    def test_the_first_request_waits_at_most_max_wait_for_company(self):
        for max_wait, expected in ((0.2, [[1, 1]]), (0.0, [[1], [1]])):
            runner = FakeRunner()

            async def scenario():
                batcher = ts.Batcher(ts.Ladder(ts.default_ladder()), 2, runner, max_wait_s=max_wait)
                batcher.start()
                first = batcher.submit(self.rows(1))
                await asyncio.sleep(0.03)
                second = batcher.submit(self.rows(1))
                await asyncio.gather(first, second)
                await batcher.stop()

            self.run_async(scenario())
            self.assertEqual(runner.batches, expected, max_wait)

    def test_a_short_max_wait_is_kept_without_a_millisecond_timer(self):
        runner = FakeRunner()

        async def scenario():
            batcher = ts.Batcher(ts.Ladder(ts.default_ladder()), 2, runner, max_wait_s=200e-6)
            batcher.start()
            started = time.perf_counter()
            await batcher.submit(self.rows(1))
            elapsed = time.perf_counter() - started
            await batcher.stop()
            return elapsed

        self.assertLess(self.run_async(scenario()), 0.05)

    def test_a_full_queue_refuses_the_whole_request(self):
        async def scenario():
            batcher = ts.Batcher(ts.Ladder([1, 2, 4, 8]), 2, FakeRunner(), queue_capacity=4)
            batcher.start()
            first = batcher.submit(self.rows(24))         # 3 pieces of 8
            with self.assertRaises(ts.QueueFull) as caught:
                batcher.submit(self.rows(9))              # 2 more pieces do not fit
            self.assertEqual(str(caught.exception), "the queue is full: 2 piece(s) refused, capacity 4")
            second = batcher.submit(self.rows(8))         # 1 does
            await asyncio.gather(first, second)
            self.assertEqual(batcher.rejected, 1)
            third = batcher.submit(self.rows(9))          # served, the queue is free again
            await third
            await batcher.stop()

        self.run_async(scenario())

    def test_at_most_lanes_batches_are_handed_to_the_worker_and_cancelled_requests_are_skipped(self):
        gate = threading.Event()
        runner = FakeRunner(gate=gate)

        async def scenario():
            batcher = ts.Batcher(ts.Ladder([1, 2, 4, 8]), 2, runner, max_wait_s=0, lanes=1)
            batcher.start()
            first = batcher.submit(self.rows(8))
            await asyncio.sleep(0.05)                      # first is on the worker, held by the gate
            second = batcher.submit(self.rows(8))
            await asyncio.sleep(0.05)                      # second is gathered, waiting for the lane
            third = batcher.submit(self.rows(8))
            third.cancel()                                 # its client gave up: it never runs
            fourth = batcher.submit(self.rows(4))
            gate.set()
            await asyncio.gather(first, second, fourth)
            await batcher.stop()

        self.run_async(scenario())
        self.assertEqual(runner.batches, [[8], [8], [4]])

    def test_a_failed_batch_fails_its_requests_and_a_cuda_error_makes_the_model_unhealthy(self):
        runner = FakeRunner()

        async def scenario():
            batcher = ts.Batcher(ts.Ladder([1, 2, 4, 8]), 2, runner, max_wait_s=0)
            batcher.start()
            runner.fail_with = ValueError("bad batch")
            with self.assertRaisesRegex(ValueError, "bad batch"):
                await batcher.submit(self.rows(2))
            self.assertIsNone(batcher.unhealthy)
            runner.fail_with = RuntimeError("CUDA error: an illegal memory access was encountered")
            with self.assertRaises(RuntimeError):
                await batcher.submit(self.rows(2))
            self.assertIsNotNone(batcher.unhealthy)
            await batcher.stop()

        self.run_async(scenario())


class NumpyModel:
    """The model on numpy, behind the same staging buffers and step as TorchModel."""

    def __init__(self, layers, largest):
        self.layers = layers
        self.stage_in = np.zeros((largest, layers[0][0].shape[1]), dtype=np.float32)
        self.stage_out = np.zeros((largest, layers[-1][0].shape[0]), dtype=np.float32)

    def step(self, bucket, rows):
        self.stage_out[:rows] = mlp_forward(self.layers, self.stage_in[:bucket])[:rows]
        return self.stage_out


@unittest.skipUnless(have("aiohttp"), "aiohttp is not installed")
class HttpTest(unittest.TestCase):
    """The HTTP side, on a numpy model: statuses, bodies and headers."""

    def test_the_protocol_over_http(self):
        from aiohttp.test_utils import TestClient, TestServer
        layers = random_layers(4, 2, seed=5)
        ladder = ts.Ladder([1, 2, 4, 8])

        async def scenario():
            model = NumpyModel(layers, ladder.largest)
            batcher = ts.Batcher(ladder, 4, ts.BatchRunner(ladder, model.stage_in, model.step), queue_capacity=64)
            server = ts.Server("mlp", ts.Protocol("mlp", 4, 4), batcher, max_body_bytes=4096)
            batcher.start()
            async with TestClient(TestServer(server.app())) as client:
                async def status(method, path, **kw):
                    response = await client.request(method, path, **kw)
                    return response.status, await response.read(), response.headers

                self.assertEqual((await status("GET", "/v2/health/live"))[:2], (200, b'{"live":true}'))
                self.assertEqual((await status("GET", "/v2/health/ready"))[:2], (200, b'{"ready":true}'))
                self.assertEqual((await status("GET", "/v2/models/mlp/ready"))[0], 200)
                code, body, headers = await status("GET", "/v2/models/mlp")
                self.assertEqual(code, 200)
                self.assertEqual(headers["Content-Type"], "application/json")
                self.assertEqual(json.loads(body)["inputs"][0]["shape"], [-1, 4])
                code, body, _ = await status("GET", "/v2/models/resnet")
                self.assertEqual((code, json.loads(body)), (404, {"error": 'unknown model "resnet"; this server '
                                                                           'serves "mlp"'}))
                self.assertEqual((await status("GET", "/v2/models/resnet/ready"))[0], 404)
                self.assertEqual((await status("POST", "/v2/models/resnet/infer", data=b"{}"))[0], 404)

                x = np.random.default_rng(1).standard_normal((11, 4)).astype(np.float32)
                request = {"id": "r1", "inputs": [{"name": "input", "datatype": "FP32", "shape": [11, 4],
                                                   "data": x.ravel().tolist()}]}
                code, body, _ = await status("POST", "/v2/models/mlp/infer", data=json.dumps(request))
                self.assertEqual(code, 200, body)
                answer = json.loads(body)
                self.assertEqual(answer["id"], "r1")
                self.assertEqual(answer["outputs"][0]["shape"], [11, 4])
                want = mlp_forward(layers, x)
                np.testing.assert_allclose(np.array(answer["outputs"][0]["data"]).reshape(11, 4), want,
                                           rtol=1e-5, atol=1e-6)

                head = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [11, 4],
                                               "parameters": {"binary_data_size": x.nbytes}}],
                                   "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
                code, body, headers = await status("POST", "/v2/models/mlp/infer", data=head + x.tobytes(),
                                                   headers={ts.HEADER_LENGTH: str(len(head))})
                self.assertEqual(code, 200, body)
                self.assertEqual(headers["Content-Type"], "application/octet-stream")
                split = int(headers[ts.HEADER_LENGTH])
                self.assertEqual(json.loads(body[:split])["outputs"][0]["parameters"]["binary_data_size"], 176)
                np.testing.assert_allclose(np.frombuffer(body[split:], dtype="<f4").reshape(11, 4), want,
                                           rtol=1e-5, atol=1e-6)

                code, body, _ = await status("POST", "/v2/models/mlp/infer", data=b"{")
                self.assertEqual(code, 400)
                self.assertTrue(json.loads(body)["error"].startswith("malformed JSON"))
                code, body, _ = await status("POST", "/v2/models/mlp/infer", data=b" " * 5000)
                self.assertEqual((code, json.loads(body)["error"]),
                                 (413, "the request body of 5000 bytes is over the limit of 4096"))

                async def chunks():
                    for _ in range(5):
                        yield b" " * 1000

                code, body, _ = await status("POST", "/v2/models/mlp/infer", data=chunks())
                self.assertEqual((code, json.loads(body)["error"]),
                                 (413, "the request body is over the limit of 4096 bytes"))

                batcher.unhealthy = RuntimeError("CUDA error")
                self.assertEqual((await status("GET", "/v2/health/ready"))[:2], (503, b'{"ready":false}'))
                code, body, _ = await status("POST", "/v2/models/mlp/infer", data=json.dumps(request))
                self.assertEqual((code, json.loads(body)), (503, {"error": "the model is not ready"}))
                batcher.unhealthy = None

                # a full queue: the batcher is held on its lane, so pieces stay queued
                batcher.capacity = 1
                await batcher._lane_free.acquire()
                await batcher._lane_free.acquire()
                one = {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [0, 0, 0, 0]}]}
                pending = [asyncio.ensure_future(status("POST", "/v2/models/mlp/infer", data=json.dumps(one)))
                           for _ in range(3)]
                codes = []
                for future in asyncio.as_completed(pending, timeout=2):
                    try:
                        codes.append((await future)[0])
                    except asyncio.TimeoutError:
                        break
                    if 503 in codes:
                        break
                self.assertIn(503, codes)
                batcher._lane_free.release()
                batcher._lane_free.release()
                for future in pending:
                    if not future.done():
                        self.assertEqual((await future)[0], 200)
            await batcher.stop()

        asyncio.run(asyncio.wait_for(scenario(), 30))

    ONE = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})

    def serve(self, scenario, **protocol_options):
        """Runs scenario(client, server, batcher) against a server of "mlp" [n, 4] -> [n, 4] on a numpy model."""
        from aiohttp.test_utils import TestClient, TestServer
        layers = random_layers(4, 2, seed=5)
        ladder = ts.Ladder([1, 2, 4, 8])

        async def run():
            model = NumpyModel(layers, ladder.largest)
            batcher = ts.Batcher(ladder, 4, ts.BatchRunner(ladder, model.stage_in, model.step), queue_capacity=64)
            server = ts.Server("mlp", ts.Protocol("mlp", 4, 4, **protocol_options), batcher, max_body_bytes=4096)
            batcher.start()
            try:
                async with TestClient(TestServer(server.app())) as client:
                    await scenario(client, server, batcher)
            finally:
                await batcher.stop()

        asyncio.run(asyncio.wait_for(run(), 30))

    @staticmethod
    async def call(client, method, path, **kw):
        response = await client.request(method, path, **kw)
        return response.status, await response.read(), response.headers

    def test_server_metadata_versions_and_json_404_405_and_500(self):
        call = self.call

        async def scenario(client, server, batcher):
            code, body, headers = await call(client, "GET", "/v2")
            self.assertEqual((code, headers["Content-Type"]), (200, "application/json"))
            self.assertEqual(json.loads(body), {"name": "torch_server", "version": ts._torch_version(),
                                                "extensions": ["binary_tensor_data"]})
            self.assertEqual(body, ts._compact(json.loads(body)).encode())
            self.assertIsInstance(json.loads(body)["version"], str)
            for model in ("/v2/models/mlp", "/v2/models/mlp/versions/1"):
                self.assertEqual((await call(client, "GET", model))[:2], (200, server.protocol.metadata()))
                self.assertEqual((await call(client, "GET", model + "/ready"))[:2],
                                 (200, b'{"name":"mlp","ready":true}'))
                code, body, _ = await call(client, "POST", model + "/infer", data=self.ONE)
                self.assertEqual(code, 200, body)
                self.assertEqual(json.loads(body)["outputs"][0]["shape"], [1, 4])
            no_version = {"error": 'model "mlp" has no version "2"; its only version is "1"'}
            for method, path in (("GET", ""), ("GET", "/ready"), ("POST", "/infer")):
                code, body, _ = await call(client, method, "/v2/models/mlp/versions/2" + path, data=self.ONE)
                self.assertEqual((code, json.loads(body)), (404, no_version), path)
            code, body, _ = await call(client, "GET", "/v2/models/resnet/versions/1/ready")
            self.assertEqual((code, json.loads(body)), (404, {"error": 'unknown model "resnet"; this server serves '
                                                                       '"mlp"'}))

            for method, path in (("GET", "/v2/foo"), ("GET", "/v2/"), ("GET", "/v2/models"), ("GET", "/"),
                                 ("POST", "/v2/models/mlp/foo"), ("GET", "/v2/models/mlp/versions"),
                                 ("DELETE", "/v2/models/mlp/versions/1/infer/x")):
                code, body, headers = await call(client, method, path)
                self.assertEqual((code, json.loads(body)), (404, {"error": f"no such endpoint: {method} {path}"}))
                self.assertEqual(headers["Content-Type"], "application/json")
            code, body, _ = await call(client, "GET", "/v2/foo?x=1")
            self.assertEqual((code, json.loads(body)), (404, {"error": "no such endpoint: GET /v2/foo"}))

            for method, path, allowed in (("POST", "/v2/health/live", "GET"), ("POST", "/v2/health/ready", "GET"),
                                          ("POST", "/v2", "GET"), ("PUT", "/v2/models/mlp", "GET"),
                                          ("DELETE", "/v2/models/mlp/versions/1/ready", "GET"),
                                          ("GET", "/v2/models/mlp/infer", "POST"),
                                          ("GET", "/v2/models/mlp/versions/1/infer", "POST"),
                                          ("PUT", "/v2/models/mlp/infer", "POST")):
                code, body, headers = await call(client, method, path)
                self.assertEqual((code, json.loads(body)),
                                 (405, {"error": f"{method} is not allowed on {path}; it takes {allowed}"}))
                self.assertEqual((headers["Allow"], headers["Content-Type"]), (allowed, "application/json"))
            self.assertEqual((await call(client, "HEAD", "/v2/health/live"))[0], 200)  # HEAD is taken as GET
            code, _, headers = await call(client, "HEAD", "/v2/models/mlp/infer")
            self.assertEqual((code, headers["Allow"]), (405, "POST"))

            def broken():
                raise ZeroDivisionError("division by zero")

            server.protocol.metadata = broken  # a handler's bug: still a JSON answer
            code, body, headers = await call(client, "GET", "/v2/models/mlp")
            self.assertEqual((code, json.loads(body)), (500, {"error": "ZeroDivisionError: division by zero"}))
            self.assertEqual(headers["Content-Type"], "application/json")

        self.serve(scenario)

    def test_limits_outputs_and_the_outputs_own_binary_data_over_http(self):
        call = self.call

        async def scenario(client, server, batcher):
            def body(rows, **extra):
                return json.dumps(dict({"inputs": [{"name": "input", "datatype": "FP32", "shape": [rows, 4],
                                                    "data": [0.5] * rows * 4}]}, **extra))

            code, answer, _ = await call(client, "POST", "/v2/models/mlp/infer", data=body(9))
            self.assertEqual((code, json.loads(answer)), (400, {"error": 'input "input" has 9 rows, over the limit of 8 '
                                                                         'rows per request (--max-rows)'}))
            code, answer, _ = await call(client, "POST", "/v2/models/mlp/infer", data=body(7))
            self.assertEqual((code, json.loads(answer)),
                             (400, {"error": 'input "input" of shape [7,4] holds 28 values, over the limit of 24 per '
                                             'request (--max-elements)'}))
            code, answer, _ = await call(client, "POST", "/v2/models/mlp/infer", data=body(6))
            self.assertEqual(code, 200, answer)
            code, answer, _ = await call(client, "POST", "/v2/models/mlp/infer", data=body(1, outputs={"output": {}}))
            self.assertEqual((code, json.loads(answer)),
                             (400, {"error": '"outputs" must be a list of output tensors, got {"output":{}}'}))
            code, answer, _ = await call(client, "POST", "/v2/models/mlp/infer",
                                         data=body(1, outputs=[{"name": "y"}]))
            self.assertEqual((code, json.loads(answer)),
                             (400, {"error": 'unknown output "y"; the model\'s output is "output"'}))
            code, answer, headers = await call(
                client, "POST", "/v2/models/mlp/infer",
                data=body(2, parameters={"binary_data_output": True},
                          outputs=[{"name": "output", "parameters": {"binary_data": False}}]))
            self.assertEqual((code, headers["Content-Type"]), (200, "application/json"))
            self.assertEqual(len(json.loads(answer)["outputs"][0]["data"]), 8)
            code, answer, headers = await call(
                client, "POST", "/v2/models/mlp/infer",
                data=body(2, parameters={"binary_data_output": False},
                          outputs=[{"name": "output", "parameters": {"binary_data": True}}]))
            self.assertEqual((code, headers["Content-Type"]), (200, "application/octet-stream"))
            self.assertEqual(len(answer) - int(headers[ts.HEADER_LENGTH]), 32)

        self.serve(scenario, max_rows=8, max_elements=24)

    def test_shutting_down_refuses_new_requests_and_lets_those_in_flight_finish(self):
        call = self.call

        async def scenario(client, server, batcher):
            for _ in range(batcher.lanes):  # the batcher is held on its lanes: a request stays in flight
                await batcher._lane_free.acquire()
            in_flight = asyncio.ensure_future(call(client, "POST", "/v2/models/mlp/infer", data=self.ONE))
            while not server.in_flight:
                await asyncio.sleep(0.005)
            drained = asyncio.ensure_future(server.drain(20))
            await asyncio.sleep(0.05)
            self.assertFalse(drained.done())
            self.assertFalse(in_flight.done())
            self.assertEqual((await call(client, "GET", "/v2/health/ready"))[:2], (503, b'{"ready":false}'))
            self.assertEqual((await call(client, "GET", "/v2/models/mlp/ready"))[:2],
                             (503, b'{"name":"mlp","ready":false}'))
            self.assertEqual((await call(client, "GET", "/v2/health/live"))[:2], (200, b'{"live":true}'))
            code, body, _ = await call(client, "POST", "/v2/models/mlp/infer", data=self.ONE)
            self.assertEqual((code, json.loads(body)), (503, {"error": "the server is shutting down"}))
            for _ in range(batcher.lanes):
                batcher._lane_free.release()
            code, body, _ = await in_flight
            self.assertEqual(code, 200, body)
            self.assertEqual(json.loads(body)["outputs"][0]["shape"], [1, 4])
            self.assertEqual(await drained, 0)
            self.assertEqual(server.in_flight, set())

        self.serve(scenario)

    def test_a_request_still_in_flight_at_the_shutdown_timeout_is_cut_off(self):
        import aiohttp
        call = self.call

        async def scenario(client, server, batcher):
            for _ in range(batcher.lanes):
                await batcher._lane_free.acquire()
            in_flight = asyncio.ensure_future(call(client, "POST", "/v2/models/mlp/infer", data=self.ONE))
            while not server.in_flight:
                await asyncio.sleep(0.005)
            self.assertEqual(await server.drain(0.05), 1)
            with self.assertRaises(aiohttp.ClientError):
                await in_flight
            self.assertEqual(server.in_flight, set())
            for _ in range(batcher.lanes):
                batcher._lane_free.release()

        self.serve(scenario)


@unittest.skipUnless(have("torch") and have("aiohttp"), "torch or aiohttp is not installed")
class ProcessTest(unittest.TestCase):
    def test_the_server_answers_and_a_sigterm_stops_it_with_exit_0(self):
        import tempfile
        import urllib.error
        import urllib.request
        layers = random_layers(4, 2, seed=5)
        tensors = {"0.weight": layers[0][0], "0.bias": layers[0][1], "2.weight": layers[1][0], "2.bias": layers[1][1]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.safetensors")
            with open(path, "wb") as f:
                f.write(encode_safetensors(tensors))
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_server.py")
            process = subprocess.Popen([sys.executable, script, "--model", path, "--device", "cpu", "--port", "0",
                                        "--largest-bucket", "8", "--shutdown-timeout-s", "5"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = process.stdout.readline()
                self.assertTrue(line.startswith("serving mlp on http://127.0.0.1:"), line)
                url = line.split()[3]

                def get(route, data=None):
                    try:
                        with urllib.request.urlopen(urllib.request.Request(url + route, data=data), timeout=10) as r:
                            return r.status, r.read()
                    except urllib.error.HTTPError as e:
                        return e.code, e.read()

                self.assertEqual(get("/v2/health/ready"), (200, b'{"ready":true}'))
                self.assertEqual(json.loads(get("/v2")[1])["version"], ts._torch_version())
                code, body = get("/v2/models/mlp/infer", HttpTest.ONE.encode())
                self.assertEqual(code, 200, body)
                self.assertEqual(get("/v2/nothing"), (404, b'{"error":"no such endpoint: GET /v2/nothing"}'))
                process.send_signal(signal.SIGTERM)
                out, err = process.communicate(timeout=30)
                self.assertEqual(process.returncode, 0, err)
                self.assertIn("stopped: ", out)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.communicate()


@unittest.skipUnless(have("torch"), "torch is not installed")
class TorchModelTest(unittest.TestCase):
    def test_the_cpu_model_computes_the_mlp_and_pads_nothing_into_the_answer(self):
        layers = random_layers(16, 3, seed=9)
        ladder = ts.Ladder([1, 2, 4, 8])
        model = ts.TorchModel(layers, ladder, "cpu")
        x = np.random.default_rng(2).standard_normal((5, 16)).astype(np.float32)
        runner = ts.BatchRunner(ladder, model.stage_in, model.step)
        request = ts.Pending(x, 16, None, 1)
        self.assertEqual(runner.run([ts.Piece(request, 0, 5)]), 8)
        np.testing.assert_allclose(request.out, mlp_forward(layers, x), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main(verbosity=1)
