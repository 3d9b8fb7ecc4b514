# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tfprov.gpu.serving_models: check the TF Serving settings and models on the controller, or sync cloud models.

Resolve (the default): the release and image from data/compat.yml, the ports, every model's source listed (local
directory, gs:// or s3:// through module_utils/model_sources.py) and checked, and a plan per model - or one line
saying what to change. Changes nothing. With sync_plans, downloads the gs:// and s3:// models of those plans into
the controller's cache (nothing is written in check mode). See plugins/modules/serving_models.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

from ansible.plugins.action import ActionBase
from ansible_collections.tfprov.gpu.plugins.module_utils import model_sources, serving

_MATRIX = {}


def one_line(text):
    return " ".join(str(text).split())


def cache_path(cache_dir, source):
    """Where a cloud source is kept on the controller: one directory per URL, readable and collision-free."""
    src = model_sources.parse_source(source)
    digest = hashlib.sha256(src.url.encode("utf-8")).hexdigest()[:12]
    return os.path.join(os.path.expanduser(cache_dir), src.scheme, src.bucket, digest)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _source_options(self, args):
        return {"s3_endpoint_url": args.get("s3_endpoint_url") or None,
                "gcs_endpoint": args.get("gcs_endpoint") or None,
                "gcs_anonymous": bool(args.get("gcs_anonymous"))}

    def _list(self, model, options):
        try:
            return model_sources.list_files(model["source"], **options)
        except ImportError as exc:
            need = "boto3" if model["scheme"] == "s3" else "google-auth and requests"
            raise serving.ServingError("model %s: %s sources need %s on the controller (%s)"
                                       % (model["name"], model["scheme"], need, exc)) from None
        except model_sources.ModelSourceError as exc:
            if model["scheme"] == "file" and not os.path.exists(model["source"]):
                raise serving.ServingError("model %s: source %s does not exist on the controller"
                                           % (model["name"], model["source"])) from None
            raise serving.ServingError("model %s: %s" % (model["name"], exc)) from None
        except ValueError as exc:
            raise serving.ServingError("model %s: %s" % (model["name"], exc)) from None

    def _sample(self, model):
        sample = model["sample_input"]
        if sample in (None, ""):
            return None
        if isinstance(sample, str):
            path = os.path.abspath(os.path.expanduser(sample))
            try:
                with open(path) as handle:
                    sample = json.load(handle)
            except (OSError, ValueError) as exc:
                raise serving.ServingError("model %s: sample_input %s cannot be read as JSON: %s"
                                           % (model["name"], path, exc)) from None
        if not isinstance(sample, dict) or not ({"instances", "inputs"} & set(sample)):
            raise serving.ServingError("model %s: sample_input is not a :predict body ({\"instances\": [...]} or "
                                       "{\"inputs\": ...})" % model["name"])
        return sample

    def _resolve(self, args):
        serving.check_network(args.get("network_mode"), args.get("bind_address"), args.get("grpc_port"),
                              args.get("rest_port"))
        serving.check_batching(args.get("batching") or {})
        if "data" not in _MATRIX:
            _MATRIX["data"] = serving.serving_matrix()
        release = serving.resolve_release(_MATRIX["data"], args.get("version"), args.get("image"),
                                          bool(args.get("gpu")))
        models = serving.normalize_models(args.get("models"))
        for model in models:
            # Local paths are the controller's, relative to its current directory; the copy needs them absolute.
            if model["scheme"] == "file":
                path = model["source"][len("file://"):] if model["source"].startswith("file://") else model["source"]
                model["source"] = os.path.abspath(os.path.expanduser(path))
            serving.check_filesystem(model, release)
        options = self._source_options(args)
        plans = []
        for model in models:
            files = self._list(model, options)
            cached = cache_path(args.get("cache_dir") or "~/.cache/tfprov/models", model["source"]) \
                if model["scheme"] != "file" else ""
            plan = serving.plan_model(model, files, cached)
            plan["sample_input"] = self._sample(model)
            if plan["sync"]:
                plan["node_path"] = os.path.join(args.get("models_dir") or "/srv/tfprov/serving/models", plan["name"])
                plan["node_entries"] = [os.path.join(plan["node_path"], entry) for entry in plan["entries"]]
            plans.append(plan)
        problems = serving.port_clashes(args.get("listeners") or [],
                                        {"tf_serving_grpc_port": args["grpc_port"],
                                         "tf_serving_rest_port": args["rest_port"]},
                                        args.get("bind_address"), args.get("node") or "?")
        if problems:
            raise serving.ServingError(problems[0])
        return {"release": release, "models": plans, "models_config": serving.render_models_config(plans)}

    def _sync(self, args):
        options = self._source_options(args)
        changed, report = False, []
        for plan in args.get("sync_plans") or []:
            if plan.get("scheme") == "file" or not plan.get("sync", True):
                continue
            try:
                result = model_sources.sync(plan["source"], plan["local_path"], check_mode=self._task.check_mode,
                                            **options)
            except (model_sources.ModelSourceError, ValueError, OSError, ImportError) as exc:
                raise serving.ServingError("model %s: %s" % (plan["name"], exc)) from None
            changed = changed or result["changed"]
            report.append(dict(result, name=plan["name"], source=plan["source"], path=plan["local_path"]))
        return changed, report

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        result["changed"] = False
        args = dict(self._task.args)
        try:
            if "sync_plans" in args:
                result["changed"], result["synced"] = self._sync(args)
            else:
                result.update(self._resolve(args))
        except serving.ServingError as exc:
            result.update(failed=True, msg=one_line(exc))
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg=one_line("cannot read the compatibility matrix: %s" % exc))
        return result
