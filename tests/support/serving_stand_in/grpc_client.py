#!/usr/bin/env python3
"""Ask a TensorFlow Serving server over gRPC with the official client (`tensorflow-serving-api`): the model's
status (ModelService.GetModelStatus) and, given inputs, a Predict (PredictionService). Prints one JSON line:

    {"target": ..., "model": ..., "status": [{"version": 1, "state": "AVAILABLE", "error_code": "OK",
     "error_message": ""}], "predictions": [3, 7], "labels": [3, 7], "correct": true, "version": 1,
     "latency_ms": 2.1}

Exit status 0 when every request succeeded (and, with labels, every answer is right), 1 otherwise, with
"error" in the line. Needs TensorFlow (tf.make_tensor_proto); the stand-in image has it:

    docker run --rm -i --network host --entrypoint /opt/tfserving/bin/python -v $PWD/examples/digits:/digits:ro \\
      tfprov/serving-stand-in:2.21.0 - --target 127.0.0.1:8500 --samples /digits/samples.json < grpc_client.py
"""

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:8500", help="host:port of the gRPC API")
    parser.add_argument("--model", default="digits")
    parser.add_argument("--version", type=int, help="a version number (default: the newest available)")
    parser.add_argument("--label", help="a version label instead of a number")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--input", default="pixels", help="input tensor name")
    parser.add_argument("--output", default="probabilities", help="output tensor name")
    parser.add_argument("--samples", help="a samples.json (examples/digits): predict its inputs, check its labels")
    parser.add_argument("--instances", help="JSON list of inputs (instead of --samples), no labels checked")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    parser.add_argument("--status-only", action="store_true")
    args = parser.parse_args()

    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import (
        get_model_status_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )

    result = {"target": args.target, "model": args.model}

    def finish(ok: bool) -> int:
        print(json.dumps(result), flush=True)
        return 0 if ok else 1

    def spec(message):
        message.name = args.model
        if args.version is not None:
            message.version.value = args.version
        elif args.label:
            message.version_label = args.label

    channel = grpc.insecure_channel(args.target)
    try:
        request = get_model_status_pb2.GetModelStatusRequest()
        spec(request.model_spec)
        reply = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(request, timeout=args.timeout)
        state_name = get_model_status_pb2.ModelVersionStatus.State.Name
        result["status"] = [{"version": s.version, "state": state_name(s.state),
                             "error_code": _code_name(s.status.error_code), "error_message": s.status.error_message}
                            for s in reply.model_version_status]
    except grpc.RpcError as exc:
        result["error"] = f"GetModelStatus: {exc.code().name}: {exc.details()}"
        return finish(False)
    if args.status_only or not (args.samples or args.instances):
        return finish(True)

    labels = None
    if args.samples:
        with open(args.samples) as handle:
            samples = json.load(handle)["samples"]
        inputs, labels = [s["pixels"] for s in samples], [s["label"] for s in samples]
    else:
        inputs = json.loads(args.instances)
    request = predict_pb2.PredictRequest()
    spec(request.model_spec)
    request.model_spec.signature_name = args.signature
    request.inputs[args.input].CopyFrom(tf.make_tensor_proto(np.asarray(inputs, dtype=np.float32)))
    try:
        started = time.perf_counter()
        reply = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=args.timeout)
        result["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    except grpc.RpcError as exc:
        result["error"] = f"Predict: {exc.code().name}: {exc.details()}"
        return finish(False)
    probabilities = tf.make_ndarray(reply.outputs[args.output])
    result["version"] = reply.model_spec.version.value
    result["predictions"] = [int(i) for i in probabilities.argmax(axis=-1)]
    if labels is not None:
        result["labels"] = labels
        result["correct"] = result["predictions"] == labels
        if not result["correct"]:
            result["error"] = "wrong digits"
            return finish(False)
    return finish(True)


def _code_name(code: int) -> str:
    from tensorflow.core.protobuf import error_codes_pb2

    try:
        return error_codes_pb2.Code.Name(code)
    except ValueError:
        return str(code)


if __name__ == "__main__":
    sys.exit(main())
