from ansible_collections.tfprov.gpu.plugins.filter.compat import pip_args


def test_pip_args_for_proxies_and_wheelhouses():
    assert pip_args("") == []
    assert pip_args("/ca.crt", "/wheelhouse", True) == [
        "--cert", "/ca.crt", "--find-links", "/wheelhouse", "--no-index"]
    assert pip_args(None, "/wheelhouse", "false") == ["--find-links", "/wheelhouse"]


def test_a_plain_http_wheelhouse_is_used_as_given_not_silently_ignored_by_pip():
    assert pip_args(None, "http://10.210.1.1:8080/", True) == [
        "--find-links", "http://10.210.1.1:8080/", "--trusted-host", "10.210.1.1", "--no-index"]
    assert pip_args(None, "http://127.0.0.1:8080/") == ["--find-links", "http://127.0.0.1:8080/"]  # pip trusts it
    assert "--trusted-host" not in pip_args(None, "https://wheels.example.org/")  # TLS: verified as usual


def test_a_package_cache_stands_in_for_pypi_and_a_plain_http_one_is_trusted_once():
    assert pip_args(None, None, False, "http://10.210.1.1:3141/index/") == [
        "--index-url", "http://10.210.1.1:3141/index/", "--trusted-host", "10.210.1.1"]
    assert pip_args(None, "http://10.210.1.1:8080/", False, "http://10.210.1.1:3141/index/") == [
        "--index-url", "http://10.210.1.1:3141/index/", "--find-links", "http://10.210.1.1:8080/",
        "--trusted-host", "10.210.1.1"]
    assert pip_args("/ca.crt", "", False, "https://mirror.example.org/simple/") == [
        "--cert", "/ca.crt", "--index-url", "https://mirror.example.org/simple/"]
