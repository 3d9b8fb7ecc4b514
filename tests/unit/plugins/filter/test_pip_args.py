from ansible_collections.tfprov.gpu.plugins.filter.compat import pip_args


def test_pip_args_for_proxies_and_wheelhouses():
    assert pip_args("") == []
    assert pip_args("/ca.crt", "/wheelhouse", True) == [
        "--cert", "/ca.crt", "--find-links", "/wheelhouse", "--no-index"]
    assert pip_args(None, "/wheelhouse", "false") == ["--find-links", "/wheelhouse"]
