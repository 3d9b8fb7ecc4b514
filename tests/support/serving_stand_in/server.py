#!/usr/bin/env python3
"""A stand-in for `tensorflow_model_server` (TensorFlow Serving) built on TensorFlow's Python package.

The tensorflow/serving images are unreachable from the test machines. This server answers the same REST API
(`/v1/models/<name>[/versions/N|/labels/L][/metadata]`, `:predict`) and gRPC API (`PredictionService`,
`ModelService` from the `tensorflow-serving-api` package) from the same SavedModel layout
(`<base_path>/<numeric version>/saved_model.pb`), takes the same flags (`--flag=value`), polls base paths for
new and removed versions, and logs the real server's messages (for example "No versions of servable ... found
under base path ...") to stderr. Like the real server it opens its ports only after every model of the initial
configuration has loaded, and exits with "Failed to start server. Error: ..." when one fails to load then.

Known differences, deliberately small: one loader thread; failed loads are not retried (the flags are
accepted); batching and platform settings are parsed and checked, not applied; Classify, Regress and
MultiInference answer UNIMPLEMENTED; the Prometheus endpoint exports a few counters only.

The top of this file needs the standard library only (flags, version policies, status JSON: unit-tested without
TensorFlow); TensorFlow, gRPC and protobuf are imported when the server runs.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

# -- flags ------------------------------------------------------------------------------------------------------

# tensorflow_model_server's flags and defaults (main.cc). Values stay strings until read, as the real parser
# takes `--name=value` and, for booleans, a bare `--name`.
FLAGS = {
    "port": "8500", "grpc_socket_path": "", "rest_api_port": "0", "rest_api_num_threads": "0",
    "rest_api_timeout_in_ms": "30000", "rest_api_enable_cors_support": "false", "enable_batching": "false",
    "allow_version_labels_for_unavailable_models": "false", "batching_parameters_file": "",
    "enable_per_model_batching_parameters": "false", "model_config_file": "",
    "model_config_file_poll_wait_seconds": "0", "model_name": "default", "model_base_path": "",
    "num_load_threads": "0", "num_unload_threads": "0", "max_num_load_retries": "5",
    "load_retry_interval_micros": "60000000", "file_system_poll_wait_seconds": "1",
    "flush_filesystem_caches": "true", "tensorflow_session_parallelism": "0",
    "tensorflow_session_config_file": "", "tensorflow_intra_op_parallelism": "0",
    "tensorflow_inter_op_parallelism": "0", "use_alts_credentials": "false", "ssl_config_file": "",
    "platform_config_file": "", "per_process_gpu_memory_fraction": "0", "saved_model_tags": "serve",
    "grpc_channel_arguments": "", "grpc_max_threads": "0", "enable_model_warmup": "true", "version": "false",
    "monitoring_config_file": "", "remove_unused_fields_from_bundle_metagraph": "true",
    "prefer_tflite_model": "false", "num_tflite_pools": "1", "num_tflite_interpreters_per_pool": "1",
    "enable_signature_method_name_check": "false", "xla_cpu_compilation_enabled": "false",
    "enable_profiler": "true", "thread_pool_factory_config_file": "", "mixed_precision": "",
    "skip_initialize_tpu": "false", "enable_grpc_healthcheck_service": "false",
}
BOOL_FLAGS = {name for name, value in FLAGS.items() if value in ("true", "false")}


class FlagError(ValueError):
    pass


def parse_flags(argv: list[str]) -> dict[str, str]:
    """`--name=value` (or `-name=value`; booleans also bare `--name`); repeated flags: the last one wins."""
    flags = dict(FLAGS)
    for arg in argv:
        match = re.fullmatch(r"--?([A-Za-z0-9_]+)(?:=(.*))?", arg, re.S)
        if not match:
            raise FlagError(f"unexpected argument {arg!r}: flags are --name=value")
        name, value = match.group(1), match.group(2)
        if name not in FLAGS:
            raise FlagError(f"unknown command line flag '{name}'")
        if value is None:
            if name not in BOOL_FLAGS:
                raise FlagError(f"flag '{name}' needs a value: --{name}=...")
            value = "true"
        if name in BOOL_FLAGS and value.lower() not in ("true", "false", "1", "0"):
            raise FlagError(f"flag '{name}' is a boolean: --{name}=true|false, not {value!r}")
        if FLAGS[name].lstrip("-").isdigit() and not re.fullmatch(r"-?\d+", value):
            raise FlagError(f"flag '{name}' is an integer, not {value!r}")
        flags[name] = value
    return flags


def flag_bool(flags: dict[str, str], name: str) -> bool:
    return flags[name].lower() in ("true", "1")


def flag_int(flags: dict[str, str], name: str) -> int:
    return int(flags[name])


# -- models and version policies ----------------------------------------------------------------------------------


@dataclass
class ModelSpec:
    name: str
    base_path: str
    policy: str = "latest"  # latest | specific | all
    num_versions: int = 1  # latest
    versions: tuple[int, ...] = ()  # specific
    labels: dict[str, int] = field(default_factory=dict)
    platform: str = "tensorflow"


def select_versions(found: list[int], spec: ModelSpec) -> list[int]:
    """The versions a policy aspires to among those on disk, newest first (servable_state_monitor order)."""
    newest_first = sorted(set(found), reverse=True)
    if spec.policy == "all":
        return newest_first
    if spec.policy == "specific":
        return [v for v in newest_first if v in set(spec.versions)]
    return newest_first[:max(spec.num_versions, 1)]


def version_dirs(names: list[str]) -> list[int]:
    """Numeric directory names are versions (leading zeros allowed, as in the real file-system source)."""
    return sorted({int(n) for n in names if re.fullmatch(r"\d+", n) and len(n) < 19})


def spec_from_single(flags: dict[str, str]) -> ModelSpec:
    return ModelSpec(name=flags["model_name"], base_path=flags["model_base_path"])


def spec_from_proto(config) -> ModelSpec:
    """A ModelConfig message (or anything shaped like one) as a ModelSpec."""
    policy, num_versions, versions = "latest", 1, ()
    which = config.model_version_policy.WhichOneof("policy_choice") if config.HasField("model_version_policy") \
        else None
    if which == "all":
        policy = "all"
    elif which == "specific":
        policy, versions = "specific", tuple(int(v) for v in config.model_version_policy.specific.versions)
    elif which == "latest":
        num_versions = config.model_version_policy.latest.num_versions or 1
    return ModelSpec(name=config.name, base_path=config.base_path, policy=policy, num_versions=num_versions,
                     versions=versions, labels={k: int(v) for k, v in config.version_labels.items()},
                     platform=config.model_platform or "tensorflow")


def check_specs(specs: list[ModelSpec]) -> None:
    """What the real ServerCore refuses before loading anything."""
    seen = set()
    for spec in specs:
        if spec.name in seen:
            raise FlagError(f"Illegal to list model {spec.name} multiple times in config list")
        seen.add(spec.name)
        if not spec.base_path:
            raise FlagError(f"Model {spec.name} has no base_path")
        if spec.platform != "tensorflow":
            raise FlagError(f"Model {spec.name} requested unsupported platform {spec.platform}")
        if spec.policy == "specific" and not spec.versions:
            raise FlagError(f"Model {spec.name}: the 'specific' version policy lists no versions")


# -- status -------------------------------------------------------------------------------------------------------

STATES = ("UNKNOWN", "START", "LOADING", "AVAILABLE", "UNLOADING", "END")
# tensorflow/core/protobuf/error_codes.proto
ERROR_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
               "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
               "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")
# http_rest_api_util's ToHTTPStatusCode
HTTP_STATUS = {"OK": 200, "CANCELLED": 499, "UNKNOWN": 500, "INVALID_ARGUMENT": 400, "DEADLINE_EXCEEDED": 504,
               "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429,
               "FAILED_PRECONDITION": 400, "ABORTED": 409, "OUT_OF_RANGE": 400, "UNIMPLEMENTED": 501,
               "INTERNAL": 500, "UNAVAILABLE": 503, "DATA_LOSS": 500, "UNAUTHENTICATED": 401}


class ServingError(Exception):
    """An error with a TensorFlow status code, answered as {"error": message} and the matching HTTP/gRPC code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class VersionState:
    state: str = "START"
    error_code: str = "OK"
    error_message: str = ""
    aspired: bool = True
    retry: bool = False  # failed, then left the aspired set: loaded again if it comes back
    servable: object = None  # the loaded SavedModel


def status_json(versions: dict[int, VersionState]) -> dict:
    """GetModelStatusResponse as the REST API renders it: every version, newest first, enums by name."""
    return {"model_version_status": [
        {"version": str(v), "state": versions[v].state,
         "status": {"error_code": versions[v].error_code, "error_message": versions[v].error_message}}
        for v in sorted(versions, reverse=True)]}


def pick_status_versions(name: str, versions: dict[int, VersionState], labels: dict[str, int],
                         version: int | None = None, label: str | None = None) -> dict[int, VersionState]:
    """The versions a status request names (GetModelStatusImpl), or the real server's NOT_FOUND."""
    if label is not None:
        if label not in labels:
            raise ServingError("INVALID_ARGUMENT", f"Unrecognized servable version label: {label}")
        version = labels[label]
    if version is not None:
        if version not in versions:
            raise ServingError("NOT_FOUND", f"Could not find version {version} of model {name}")
        return {version: versions[version]}
    if not versions:
        raise ServingError("NOT_FOUND", f"Could not find any versions of model {name}")
    return dict(versions)


def pick_serving_version(name: str, versions: dict[int, VersionState], labels: dict[str, int],
                         version: int | None = None, label: str | None = None) -> int:
    """The version a predict or metadata request goes to: named, labelled, or the newest AVAILABLE one."""
    if label is not None:
        if label not in labels:
            raise ServingError("INVALID_ARGUMENT", f"Unrecognized servable version label: {label}")
        version = labels[label]
    available = sorted(v for v, s in versions.items() if s.state == "AVAILABLE")
    if version is not None:
        if version not in available:
            raise ServingError("NOT_FOUND", f"Servable not found for request: Specific({name}, {version})")
        return version
    if not available:
        raise ServingError("NOT_FOUND", f"Servable not found for request: Latest({name})")
    return available[-1]


# -- logging like the real server (glog lines on stderr) -----------------------------------------------------------

_log_lock = threading.Lock()


def log(level: str, source: str, message: str) -> None:
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    with _log_lock:
        sys.stderr.write(f"{stamp}: {level} {source}] {message}\n")
        sys.stderr.flush()


SOURCE = "tensorflow_serving/sources/storage_path/file_system_storage_path_source.cc"
HARNESS = "tensorflow_serving/core/loader_harness.cc"


def servable_id(name: str, version: int) -> str:
    return f"{{name: {name} version: {version}}}"


# -- the server (needs TensorFlow, gRPC, protobuf) ---------------------------------------------------------------


def load_text_proto(path: str, message):
    from google.protobuf import text_format

    with open(path) as handle:
        text = handle.read()
    try:
        return text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise FlagError(f"Invalid protobuf file: '{path}': {exc}") from None


def side_messages():
    """BatchingParameters and MonitoringConfig: tensorflow-serving-api does not ship them, so they are built here
    from the fields of session_bundle_config.proto and monitoring_config.proto (text format needs only names)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto(name="tfprov_stand_in.proto", package="tensorflow.serving",
                                               syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    F = descriptor_pb2.FieldDescriptorProto
    batching = proto.message_type.add(name="BatchingParameters")
    for number, (name, kind) in enumerate([
            ("max_batch_size", "Int64Value"), ("batch_timeout_micros", "Int64Value"),
            ("max_enqueued_batches", "Int64Value"), ("num_batch_threads", "Int64Value"),
            ("thread_pool_name", "StringValue"), ("allowed_batch_sizes", None),
            ("pad_variable_length_inputs", "bool"), ("enable_large_batch_splitting", "BoolValue"),
            ("max_execution_batch_size", "Int64Value"), ("enable_priority_queue", "bool"),
            ("batch_padding_policy", "StringValue")], start=1):
        if kind is None:
            batching.field.add(name=name, number=number, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
        elif kind == "bool":
            batching.field.add(name=name, number=number, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
        else:
            batching.field.add(name=name, number=number, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                               type_name=f".google.protobuf.{kind}")
    prometheus = proto.message_type.add(name="PrometheusConfig")
    prometheus.field.add(name="enable", number=1, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    prometheus.field.add(name="path", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    monitoring = proto.message_type.add(name="MonitoringConfig")
    monitoring.field.add(name="prometheus_config", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                         type_name=".tensorflow.serving.PrometheusConfig")
    pool.Add(proto)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.MonitoringConfig")))


def read_model_config(path: str) -> list[ModelSpec]:
    from tensorflow_serving.config import model_server_config_pb2

    config = load_text_proto(path, model_server_config_pb2.ModelServerConfig())
    if config.WhichOneof("config") == "custom_model_config":
        raise FlagError("ModelServer does not yet support custom model config.")
    return [spec_from_proto(c) for c in config.model_config_list.config]


def load_error(exc: Exception, path: str) -> tuple[str, str]:
    """(error code, message) of a failed load, worded like the real server's SavedModel loader."""
    text = str(exc)
    if "does not exist" in text and "saved_model" in text.lower():
        return ("NOT_FOUND", f"Could not find SavedModel .pb or .pbtxt at supplied export directory path: {path}. "
                "Check that the directory exists and that you have the right permissions for accessing it.")
    if "Cannot parse file" in text or "Error parsing message" in text or "DecodeError" in type(exc).__name__:
        return "DATA_LOSS", f"Can't parse {os.path.join(path, 'saved_model.pb')} as binary proto"
    code = getattr(exc, "error_code", None)
    if isinstance(code, int) and 0 < code < len(ERROR_CODES):
        return ERROR_CODES[code], getattr(exc, "message", text)
    return "UNKNOWN", f"{type(exc).__name__}: {text}"


class Servable:
    """One loaded version: its signatures (callables) and signature_defs (metadata)."""

    def __init__(self, path: str, tags: list[str]):
        import tensorflow as tf
        from tensorflow.core.protobuf import saved_model_pb2

        self.path = path
        self.model = tf.saved_model.load(path, tags=tags)
        saved = saved_model_pb2.SavedModel()
        with open(os.path.join(path, "saved_model.pb"), "rb") as handle:
            saved.ParseFromString(handle.read())
        graphs = [g for g in saved.meta_graphs if set(tags) <= set(g.meta_info_def.tags)] or list(saved.meta_graphs)
        self.signature_defs = graphs[0].signature_def
        self.signatures = dict(self.model.signatures)

    def signature(self, name: str):
        name = name or "serving_default"
        if name not in self.signatures or name not in self.signature_defs:
            raise ServingError("INVALID_ARGUMENT", f"Serving signature key \"{name}\" not found.")
        return self.signatures[name], self.signature_defs[name]


class Manager:
    """Models, their versions and states; a poller thread keeps them in line with the base paths."""

    def __init__(self, specs: list[ModelSpec], flags: dict[str, str]):
        self.lock = threading.RLock()
        self.specs = {s.name: s for s in specs}
        self.models: dict[str, dict[int, VersionState]] = {s.name: {} for s in specs}
        self.tags = [t for t in flags["saved_model_tags"].split(",") if t]
        self.poll_wait = flag_int(flags, "file_system_poll_wait_seconds")
        self.stop = threading.Event()
        self.counters: dict[tuple, int] = {}

    def count(self, *key) -> None:
        with self.lock:
            self.counters[key] = self.counters.get(key, 0) + 1

    def set_specs(self, specs: list[ModelSpec]) -> None:
        log("I", "tensorflow_serving/model_servers/server_core.cc", "Adding/updating models.")
        with self.lock:
            for spec in specs:
                log("I", "tensorflow_serving/model_servers/server_core.cc", f"(Re-)adding model: {spec.name}")
                self.models.setdefault(spec.name, {})
            for gone in set(self.specs) - {s.name for s in specs}:
                for state in self.models.get(gone, {}).values():
                    state.aspired = False
            self.specs = {s.name: s for s in specs}

    def found_versions(self, spec: ModelSpec) -> list[int] | None:
        try:
            names = os.listdir(spec.base_path)
        except FileNotFoundError:
            log("E", SOURCE, "FileSystemStoragePathSource encountered a filesystem access error: Could not find "
                f"base path {spec.base_path} for servable {spec.name} with error NOT_FOUND: {spec.base_path} "
                "not found")
            return None
        except OSError as exc:
            log("E", SOURCE, f"FileSystemStoragePathSource encountered a filesystem access error: {exc}")
            return None
        found = version_dirs([n for n in names if os.path.isdir(os.path.join(spec.base_path, n))])
        if not found:
            log("W", SOURCE, f"No versions of servable {spec.name} found under base path {spec.base_path}. "
                "Did you forget to name your leaf directory as a number (eg. '/1/')?")
        return found

    def poll_once(self) -> None:
        with self.lock:
            specs = list(self.specs.values())
            retired = {n: v for n, v in self.models.items() if n not in self.specs}
        for name, versions in retired.items():
            for version in [v for v, s in versions.items() if s.state == "AVAILABLE"]:
                self._unload(name, version)
        for spec in specs:
            found = self.found_versions(spec)
            if found is None:
                continue
            aspired = select_versions(found, spec)
            with self.lock:
                versions = self.models.setdefault(spec.name, {})
                for version, state in versions.items():
                    state.aspired = version in aspired
                todo = [v for v in sorted(aspired) if v not in versions or versions[v].state == "END"
                        and (versions[v].error_code == "OK" or versions[v].retry)]
            for version in todo:
                log("I", SOURCE, f"File-system polling update: Servable:{servable_id(spec.name, version)}; "
                    f"Servable path: {os.path.join(spec.base_path, str(version))}; Polling frequency: "
                    f"{self.poll_wait}")
                self._load(spec, version)
            with self.lock:
                ready = any(versions[v].state == "AVAILABLE" for v in aspired if v in versions)
                stale = [v for v, s in versions.items() if not s.aspired and s.state == "AVAILABLE"]
                for state in versions.values():  # a failed version that comes back is tried again
                    state.retry = state.retry or (not state.aspired and state.state == "END")
            # Availability preserving: an old version goes only once a wanted one serves (or none is wanted).
            if ready or not aspired:
                for version in stale:
                    self._unload(spec.name, version)

    def _load(self, spec: ModelSpec, version: int) -> None:
        path = os.path.join(spec.base_path, str(version))
        sid = servable_id(spec.name, version)
        with self.lock:
            state = self.models[spec.name].setdefault(version, VersionState())
            state.state, state.error_code, state.error_message, state.aspired = "LOADING", "OK", "", True
            state.retry = False
        log("I", "tensorflow_serving/core/basic_manager.cc", f"Successfully reserved resources to load servable {sid}")
        log("I", HARNESS, f"Approving load for servable version {sid}")
        log("I", HARNESS, f"Loading servable version {sid}")
        log("I", "external/org_tensorflow/tensorflow/cc/saved_model/reader.cc", f"Reading SavedModel from: {path}")
        started = time.monotonic()
        try:
            servable = Servable(path, self.tags)
        except Exception as exc:  # noqa: BLE001 - every loader failure becomes the version's status
            code, message = load_error(exc, path)
            log("E", "tensorflow_serving/util/retrier.cc", f"Loading servable: {sid} failed: {code}: {message}")
            log("I", "tensorflow_serving/core/loader_harness.cc", f"loader error detail: {type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:500]}")
            self.count("load", path, "failure")
            with self.lock:
                state.state, state.error_code, state.error_message = "END", code, message
            return
        took = (time.monotonic() - started) * 1e6
        log("I", "external/org_tensorflow/tensorflow/cc/saved_model/loader.cc",
            f"SavedModel load for tags {{ {' '.join(self.tags)} }}; Status: success: OK. Took {took:.0f} "
            "microseconds.")
        log("I", HARNESS, f"Successfully loaded servable version {sid}")
        self.count("load", path, "success")
        with self.lock:
            state.servable, state.state = servable, "AVAILABLE"

    def _unload(self, name: str, version: int) -> None:
        sid = servable_id(name, version)
        with self.lock:
            state = self.models[name][version]
            state.state = "UNLOADING"
        log("I", HARNESS, f"Quiescing servable version {sid}")
        log("I", HARNESS, f"Unloading servable version {sid}")
        with self.lock:
            state.servable, state.state = None, "END"
        log("I", HARNESS, f"Done unloading servable version {sid}")

    def initial_load(self) -> list[str]:
        """Poll until every model of the start-up config has its aspired versions loaded or failed (ServerCore
        waits the same way: a base path with no version keeps the server from starting). Failures, as text."""
        while not self.stop.is_set():
            self.poll_once()
            with self.lock:
                pending = [n for n, s in self.specs.items()
                           if not self.models[n] or any(v.state in ("START", "LOADING") for v in
                                                        self.models[n].values() if v.aspired)
                           or not any(v.aspired for v in self.models[n].values())]
                failed = [f"{{{servable_id(n, v)} due to error: {s.error_code}: {s.error_message}}}"
                          for n in self.specs for v, s in sorted(self.models[n].items())
                          if s.aspired and s.state == "END" and s.error_code != "OK"]
            if not pending:
                return failed
            self.stop.wait(max(self.poll_wait, 1))
        return []

    def poll_forever(self) -> None:
        if self.poll_wait <= 0:  # 0: exactly one poll (done at start-up); negative: none
            return
        while not self.stop.wait(self.poll_wait):
            try:
                self.poll_once()
            except Exception as exc:  # noqa: BLE001 - keep polling whatever one pass hit
                log("E", SOURCE, f"polling failed: {type(exc).__name__}: {exc}")

    # -- queries

    def status(self, name: str, version: int | None = None, label: str | None = None) -> dict[int, VersionState]:
        with self.lock:
            spec = self.specs.get(name)
            return pick_status_versions(name, dict(self.models.get(name, {})), spec.labels if spec else {},
                                        version, label)

    def servable(self, name: str, version: int | None = None, label: str | None = None) -> tuple[int, Servable]:
        with self.lock:
            if name not in self.specs:
                if label is None and version is None:
                    raise ServingError("NOT_FOUND", f"Servable not found for request: Latest({name})")
                raise ServingError("NOT_FOUND", f"Servable not found for request: Specific({name}, {version})")
            versions = self.models[name]
            chosen = pick_serving_version(name, versions, self.specs[name].labels, version, label)
            return chosen, versions[chosen].servable


# -- predict ----------------------------------------------------------------------------------------------------


def _decode_b64(value):
    import base64

    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode_b64(v) for v in value]
    return value


def _tensor(value, spec_def, name):
    import numpy as np
    import tensorflow as tf

    dtype = tf.dtypes.as_dtype(spec_def.dtype)
    try:
        array = np.array(_decode_b64(value), dtype=object if dtype == tf.string else dtype.as_numpy_dtype)
        return tf.constant(array, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ServingError("INVALID_ARGUMENT", f"Failed to process element: {name} of 'instances' list. "
                           f"Error: Invalid argument: {exc}") from None


def _run(function, inputs: dict):
    import tensorflow as tf

    try:
        return {k: v.numpy() for k, v in function(**inputs).items()}
    except tf.errors.OpError as exc:
        raise ServingError(ERROR_CODES[exc.error_code], exc.message) from None
    except (TypeError, ValueError) as exc:
        raise ServingError("INVALID_ARGUMENT", str(exc)) from None


def _jsonable(array):
    if array.dtype == object:
        return [_jsonable(a) for a in array] if array.ndim else array.item().decode("utf-8", "replace")
    return array.tolist()


def rest_predict(servable: Servable, body: dict) -> dict:
    """The REST predict API: row format ("instances" → "predictions") or columnar ("inputs" → "outputs")."""
    function, sig = servable.signature(body.get("signature_name", ""))
    names = sorted(sig.inputs)
    if ("instances" in body) == ("inputs" in body):
        raise ServingError("INVALID_ARGUMENT", "Missing 'inputs' or 'instances' key" if "instances" not in body
                           else "Only one of 'inputs' or 'instances' keys should be specified")
    if "instances" in body:
        rows = body["instances"]
        if not isinstance(rows, list) or not rows:
            raise ServingError("INVALID_ARGUMENT", "Expecting 'instances' to be an list/array")
        named = all(isinstance(r, dict) and set(r) != {"b64"} for r in rows)
        if named:
            for row in rows:
                if set(row) != set(names):
                    raise ServingError("INVALID_ARGUMENT", f"Failed to process element: 0 key: "
                                       f"{sorted(set(row) ^ set(names))[0]} of 'instances' list. Error: Invalid "
                                       "argument: JSON object: does not have named input")
            columns = {n: [row[n] for row in rows] for n in names}
        elif len(names) == 1:
            columns = {names[0]: rows}
        else:
            raise ServingError("INVALID_ARGUMENT", "Failed to process element: 0 of 'instances' list. Error: "
                               "Invalid argument: JSON Value not an object")
    else:
        given = body["inputs"]
        if isinstance(given, dict) and set(given) != {"b64"}:
            missing = sorted(set(names) - set(given))
            if missing:
                raise ServingError("INVALID_ARGUMENT", f"Missing input: {missing[0]}")
            columns = {n: given[n] for n in names}
        elif len(names) == 1:
            columns = {names[0]: given}
        else:
            raise ServingError("INVALID_ARGUMENT", "'inputs' must be an object naming every input")
    outputs = _run(function, {n: _tensor(v, sig.inputs[n], n) for n, v in columns.items()})
    if "instances" in body:
        if len(outputs) == 1:
            return {"predictions": _jsonable(next(iter(outputs.values())))}
        keys = sorted(outputs)
        return {"predictions": [{k: _jsonable(outputs[k][i]) if outputs[k].ndim > 1 else outputs[k][i].item()
                                 for k in keys} for i in range(len(outputs[keys[0]]))]}
    if len(outputs) == 1:
        return {"outputs": _jsonable(next(iter(outputs.values())))}
    return {"outputs": {k: _jsonable(v) for k, v in outputs.items()}}


def metadata_json(name: str, version: int, servable: Servable) -> dict:
    from google.protobuf import json_format
    from tensorflow_serving.apis import get_model_metadata_pb2

    sigs = get_model_metadata_pb2.SignatureDefMap()
    for key, value in servable.signature_defs.items():
        sigs.signature_def[key].CopyFrom(value)
    return {"model_spec": {"name": name, "signature_name": "", "version": str(version)},
            "metadata": {"signature_def": json_format.MessageToDict(
                sigs, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)}}


# -- REST ---------------------------------------------------------------------------------------------------------

GET_PATH = re.compile(r"/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:/(metadata))?",
                      re.I)
POST_PATH = re.compile(r"/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?:(classify|regress|predict)",
                       re.I)


def make_rest_handler(manager: Manager, prometheus_path: str | None):
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "TensorFlow-Serving-stand-in"

        def log_message(self, *args):  # the real server does not log requests
            pass

        def _send(self, code: int, body: dict | str, content_type: str = "application/json") -> None:
            data = (body if isinstance(body, str) else json.dumps(body, indent=1) + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, exc: ServingError) -> None:
            self._send(HTTP_STATUS.get(exc.code, 500), {"error": exc.message})

        def do_GET(self):  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if prometheus_path and path == prometheus_path:
                return self._send(200, prometheus_text(manager), "text/plain; version=0.0.4")
            match = GET_PATH.fullmatch(path)
            if not match:
                if path.lower().startswith("/v1/"):
                    return self._error(ServingError("INVALID_ARGUMENT", f"Malformed request: GET {path}"))
                return self._send(404, {"error": f"Not found: GET {path}"})
            name, version, label, metadata = match.groups()
            try:
                if not name:
                    raise ServingError("INVALID_ARGUMENT", "Missing model name in request.")
                version = int(version) if version else None
                if metadata:
                    chosen, servable = manager.servable(name, version, label)
                    return self._send(200, metadata_json(name, chosen, servable))
                return self._send(200, status_json(manager.status(name, version, label)))
            except ServingError as exc:
                return self._error(exc)

        def do_POST(self):  # noqa: N802
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            match = POST_PATH.fullmatch(path)
            if not match:
                return self._error(ServingError("INVALID_ARGUMENT", f"Malformed request: POST {path}"))
            name, version, label, verb = match.groups()
            try:
                if verb.lower() != "predict":
                    raise ServingError("UNIMPLEMENTED", f"The stand-in model server answers predict only, not {verb}")
                try:
                    body = json.loads(raw or b"{}")
                except ValueError as exc:
                    raise ServingError("INVALID_ARGUMENT", f"JSON Parse error: {exc}") from None
                if not isinstance(body, dict):
                    raise ServingError("INVALID_ARGUMENT", "JSON Parse error: request is not a JSON object")
                chosen, servable = manager.servable(name, int(version) if version else None, label)
                answer = rest_predict(servable, body)
                manager.count("request", name, "OK")
                return self._send(200, answer)
            except ServingError as exc:
                manager.count("request", name, exc.code)
                return self._error(exc)

    return Handler


def prometheus_text(manager: Manager) -> str:
    lines = ["# TYPE :tensorflow:serving:request_count counter"]
    with manager.lock:
        counters = dict(manager.counters)
        states = {(n, v): s.state for n, vs in manager.models.items() for v, s in vs.items()}
    for (kind, a, b), value in sorted(counters.items()):
        if kind == "request":
            lines.append(f':tensorflow:serving:request_count{{model_name="{a}",status="{b}"}} {value}')
    lines.append("# TYPE :tensorflow:cc:saved_model:load_attempt_count counter")
    for (kind, a, b), value in sorted(counters.items()):
        if kind == "load":
            lines.append(f':tensorflow:cc:saved_model:load_attempt_count{{model_path="{a}",status="{b}"}} {value}')
    lines.append("# TYPE :tensorflow:serving:model_version_available gauge")
    for (name, version), state in sorted(states.items()):
        lines.append(f':tensorflow:serving:model_version_available{{model_name="{name}",version="{version}"}} '
                     f"{int(state == 'AVAILABLE')}")
    return "\n".join(lines) + "\n"


# -- gRPC ---------------------------------------------------------------------------------------------------------


def make_servicers(manager: Manager, reload_config):
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import (
        get_model_metadata_pb2,
        get_model_status_pb2,
        model_management_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )
    from tensorflow_serving.apis.get_model_status_pb2 import ModelVersionStatus

    def spec_args(spec):
        which = spec.WhichOneof("version_choice")
        return (spec.version.value if which == "version" else None,
                spec.version_label if which == "version_label" else None)

    def abort(context, exc: ServingError):
        context.abort(getattr(grpc.StatusCode, exc.code, grpc.StatusCode.UNKNOWN), exc.message)

    class Prediction(prediction_service_pb2_grpc.PredictionServiceServicer):
        def Predict(self, request, context):  # noqa: N802 - gRPC's naming
            name = request.model_spec.name
            try:
                version, servable = manager.servable(name, *spec_args(request.model_spec))
                signature_name = request.model_spec.signature_name or "serving_default"
                function, sig = servable.signature(signature_name)
                missing = sorted(set(sig.inputs) - set(request.inputs))
                extra = sorted(set(request.inputs) - set(sig.inputs))
                if missing or extra:
                    raise ServingError("INVALID_ARGUMENT", f"input size does not match signature: "
                                       f"{len(request.inputs)}!={len(sig.inputs)} len({{{','.join(extra)}}}) "
                                       f"missing {{{','.join(missing)}}}")
                inputs = {}
                for key, proto in request.inputs.items():
                    dtype = tf.dtypes.as_dtype(sig.inputs[key].dtype)
                    try:
                        inputs[key] = tf.constant(tf.make_ndarray(proto), dtype=dtype)
                    except (TypeError, ValueError) as exc:
                        raise ServingError("INVALID_ARGUMENT", f"input {key}: expected {dtype.name}: {exc}") from None
                outputs = _run(function, inputs)
                wanted = list(request.output_filter) or sorted(outputs)
                unknown = [o for o in wanted if o not in outputs]
                if unknown:
                    raise ServingError("INVALID_ARGUMENT", f"output tensor alias not found in signature: {unknown[0]} "
                                       f"Outputs expected to be in the set {{{','.join(sorted(outputs))}}}.")
                response = predict_pb2.PredictResponse()
                response.model_spec.name = name
                response.model_spec.version.value = version
                response.model_spec.signature_name = signature_name
                for key in wanted:
                    response.outputs[key].CopyFrom(tf.make_tensor_proto(outputs[key]))
                manager.count("request", name, "OK")
                return response
            except ServingError as exc:
                manager.count("request", name, exc.code)
                abort(context, exc)

        def GetModelMetadata(self, request, context):  # noqa: N802
            try:
                fields = list(request.metadata_field)
                if fields != ["signature_def"]:
                    raise ServingError("INVALID_ARGUMENT", "Metadata field signature_def is the only one supported"
                                       if fields else "GetModelMetadataRequest must specify at least one "
                                       "metadata_field")
                version, servable = manager.servable(request.model_spec.name, *spec_args(request.model_spec))
                sigs = get_model_metadata_pb2.SignatureDefMap()
                for key, value in servable.signature_defs.items():
                    sigs.signature_def[key].CopyFrom(value)
                response = get_model_metadata_pb2.GetModelMetadataResponse()
                response.model_spec.name = request.model_spec.name
                response.model_spec.version.value = version
                response.metadata["signature_def"].Pack(sigs)
                return response
            except ServingError as exc:
                abort(context, exc)

        def _unimplemented(self, request, context):
            abort(context, ServingError("UNIMPLEMENTED", "The stand-in model server answers Predict only"))

        Classify = Regress = MultiInference = _unimplemented

    class Models(model_service_pb2_grpc.ModelServiceServicer):
        def GetModelStatus(self, request, context):  # noqa: N802
            try:
                versions = manager.status(request.model_spec.name, *spec_args(request.model_spec))
            except ServingError as exc:
                return abort(context, exc)
            response = get_model_status_pb2.GetModelStatusResponse()
            for version in sorted(versions, reverse=True):
                state = versions[version]
                entry = response.model_version_status.add(version=version,
                                                          state=ModelVersionStatus.State.Value(state.state))
                entry.status.error_code = ERROR_CODES.index(state.error_code)
                entry.status.error_message = state.error_message
            return response

        def HandleReloadConfigRequest(self, request, context):  # noqa: N802
            response = model_management_pb2.ReloadConfigResponse()
            try:
                reload_config([spec_from_proto(c) for c in request.config.model_config_list.config])
            except FlagError as exc:
                response.status.error_code = ERROR_CODES.index("INVALID_ARGUMENT")
                response.status.error_message = str(exc)
            return response

    return Prediction(), Models(), prediction_service_pb2_grpc, model_service_pb2_grpc


# -- main ---------------------------------------------------------------------------------------------------------


def fail(message: str) -> int:
    sys.stdout.write(f"Failed to start server. Error: {message}\n")
    sys.stdout.flush()
    log("E", "tensorflow_serving/model_servers/main.cc", message)
    return 255


def serve(flags: dict[str, str]) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    if flag_bool(flags, "version"):
        from importlib.metadata import version

        import tensorflow as tf

        print(f"TensorFlow ModelServer: {version('tensorflow-serving-api')}-stand-in\n"
              f"TensorFlow Library: {tf.__version__}")
        return 0
    if not flags["model_config_file"] and not flags["model_base_path"]:
        return fail("Invalid argument: Both server_options.model_base_path and server_options.model_config_file "
                    "are empty!")
    if flag_int(flags, "port") == flag_int(flags, "rest_api_port"):
        return fail("Invalid argument: server_options.grpc_port and server_options.http_port cannot be the same")
    batching_class, monitoring_class = side_messages()
    try:
        if flags["model_config_file"]:
            specs = read_model_config(flags["model_config_file"])
        else:
            log("I", "tensorflow_serving/model_servers/server.cc", "Building single TensorFlow model file config: "
                f" model_name: {flags['model_name']} model_base_path: {flags['model_base_path']}")
            specs = [spec_from_single(flags)]
        check_specs(specs)
        if flag_bool(flags, "enable_batching") and flags["batching_parameters_file"]:
            load_text_proto(flags["batching_parameters_file"], batching_class())
        prometheus_path = None
        if flags["monitoring_config_file"]:
            monitoring = load_text_proto(flags["monitoring_config_file"], monitoring_class())
            if monitoring.prometheus_config.enable:
                prometheus_path = monitoring.prometheus_config.path or "/monitoring/prometheus/metrics"
    except FlagError as exc:
        return fail(f"Invalid argument: {exc}")
    except OSError as exc:
        return fail(f"Not found: {exc}")

    import grpc

    manager = Manager([], flags)
    config_lock = threading.Lock()

    def reload_config(new_specs: list[ModelSpec]) -> None:
        check_specs(new_specs)
        with config_lock:
            manager.set_specs(new_specs)
            manager.poll_once()

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: (stop.set(), manager.stop.set()))

    manager.set_specs(specs)
    failed = manager.initial_load()
    if stop.is_set():
        return 0
    if failed:
        return fail(f"UNKNOWN: {len(failed)} servable(s) did not become available: {{{', '.join(failed)}, }}")

    from concurrent import futures

    prediction, models, prediction_grpc, model_grpc = make_servicers(manager, reload_config)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max(flag_int(flags, "grpc_max_threads"), 8)))
    prediction_grpc.add_PredictionServiceServicer_to_server(prediction, server)
    model_grpc.add_ModelServiceServicer_to_server(models, server)
    port = flag_int(flags, "port")
    if server.add_insecure_port(f"0.0.0.0:{port}") == 0:
        return fail(f"Invalid argument: Failed to BuildAndStart gRPC server (port {port} in use?)")
    server.start()
    log("I", "tensorflow_serving/model_servers/server.cc", f"Running gRPC ModelServer at 0.0.0.0:{port} ...")

    threads = [threading.Thread(target=manager.poll_forever, daemon=True, name="fs-poll")]
    rest = None
    if flag_int(flags, "rest_api_port"):
        from http.server import ThreadingHTTPServer

        try:
            rest = ThreadingHTTPServer(("0.0.0.0", flag_int(flags, "rest_api_port")),
                                       make_rest_handler(manager, prometheus_path))
        except OSError as exc:
            server.stop(0)
            return fail(f"Invalid argument: Failed to start HTTP Server at localhost:{flags['rest_api_port']}: "
                        f"{exc}")
        rest.daemon_threads = True
        threads.append(threading.Thread(target=rest.serve_forever, daemon=True, name="rest"))
        log("I", "tensorflow_serving/model_servers/server.cc",
            f"Exporting HTTP/REST API at:localhost:{flags['rest_api_port']} ...")

    config_wait = flag_int(flags, "model_config_file_poll_wait_seconds")
    if flags["model_config_file"] and config_wait > 0:
        def poll_config() -> None:
            last = specs
            while not stop.wait(config_wait):
                try:
                    new = read_model_config(flags["model_config_file"])
                    if new != last:
                        reload_config(new)
                        last = new
                except (FlagError, OSError) as exc:
                    log("E", "tensorflow_serving/model_servers/server.cc", f"Failed to reload config: {exc}")

        threads.append(threading.Thread(target=poll_config, daemon=True, name="config-poll"))
    for thread in threads:
        thread.start()
    stop.wait()
    if rest:
        rest.shutdown()
    server.stop(1).wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        flags = parse_flags(sys.argv[1:] if argv is None else argv)
    except FlagError as exc:
        sys.stderr.write(f"ERROR: {exc}\nusage: tensorflow_model_server --port=8500 --rest_api_port=8501 "
                         "(--model_name=NAME --model_base_path=PATH | --model_config_file=FILE) ...\n")
        return 255
    return serve(flags)


if __name__ == "__main__":
    sys.exit(main())
