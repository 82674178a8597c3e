"""parity: helm-unittest's ``set`` paths, how a suite's layers make one test's values, and
the comparison of upstream's render with ours.

The path cases follow helm-unittest's documented behaviour (its DOCUMENT.md and the tests of its
``valueutils`` package): dots separate map keys, ``[n]`` indexes a list (creating ``n`` nulls
before the value), a key that holds dots is written in brackets where a key is expected, and
``,`` ``{`` ``}`` ``=`` are refused anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from slinky_harness import parity
from slinky_harness.helm import client
from slinky_harness.parity import SetPathError, apply_set, build_set_value, parse_set_path

VALUE = {"foo": "bar"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a", {"a": VALUE}),
        ("a.b", {"a": {"b": VALUE}}),
        ("a[1]", {"a": [None, VALUE]}),
        ("a[1].b", {"a": [None, {"b": VALUE}]}),
        ("a[0]", {"a": [VALUE]}),
        ("a[0][1]", {"a": [[None, VALUE]]}),
        ("a.[kubernetes.io/os]", {"a": {"kubernetes.io/os": VALUE}}),
        ("[a.b].c", {"a.b": {"c": VALUE}}),
        ("[0]", {"0": VALUE}),
        ("a.[b.c][2]", {"a": {"b.c": [None, None, VALUE]}}),
        ("nodesets.slinky.podSpec.nodeSelector.foo", {
            "nodesets": {"slinky": {"podSpec": {"nodeSelector": {"foo": VALUE}}}}
        }),
        ("a-b_c.d/e", {"a-b_c": {"d/e": VALUE}}),
    ],
)  # fmt: skip
def test_a_set_path_builds_the_document_helm_unittest_builds(
    path: str, expected: dict[str, Any]
) -> None:
    assert build_set_value(path, VALUE) == expected


def test_the_steps_of_a_path_are_keys_and_indices() -> None:
    assert parse_set_path("a.b[3].[c.d]") == ("a", "b", 3, "c.d")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "empty"),
        ("a,b", "','"),
        ("a.{b}", "'{'"),
        ("a=b", "'='"),
        ("a.", "ends with '.'"),
        ("a..b", "empty key at position 2"),
        ("a[x]", "[x] is not a non-negative integer"),
        ("a[-1]", "[-1] is not a non-negative integer"),
        ("a[b.c]", "[b.c] is not a non-negative integer"),
        ("a[1", "never closed"),
        ("a]", "unexpected ']'"),
        ("a[0]b", "unexpected 'b'"),
        ("a.[b[c]]", "escaped key"),
        ("a.[]", "escaped key"),
    ],
)
def test_a_path_helm_unittest_refuses_is_an_error_that_names_it(path: str, message: str) -> None:
    with pytest.raises(SetPathError) as caught:
        parse_set_path(path)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_set_entries_merge_in_order_maps_deeply_and_lists_replace() -> None:
    base = {"a": {"keep": 1, "list": [1, 2, 3]}, "b": "x"}
    merged = apply_set(base, {"a.list[1]": 9, "a.new": True, "b": None})
    assert merged == {"a": {"keep": 1, "list": [None, 9], "new": True}, "b": None}
    assert base == {"a": {"keep": 1, "list": [1, 2, 3]}, "b": "x"}


def test_a_later_entry_over_an_earlier_one_wins() -> None:
    assert apply_set({}, {"a.image": "x:1", "a.image.repository": "y"}) == {
        "a": {"image": {"repository": "y"}}
    }
    assert apply_set({}, {"a.image.repository": "y", "a.image": "x:1"}) == {"a": {"image": "x:1"}}


SUITE = """\
suite: layering
templates: [x.yaml]
release:
  name: rel-a
  namespace: ns-a
values: [suite-values.yaml]
capabilities:
  majorVersion: "1"
  minorVersion: "30"
  apiVersions: [a.example/v1]
set:
  shared.level: suite
  shared.suite: true
tests:
  - it: only the suite's layers
    asserts: [{notFailedTemplate: {}}]
  - it: a test's own set wins over the suite's
    values: [test-values.yaml]
    set:
      shared.level: test
      plain: on
      date: 2024-01-02
    release:
      name: rel-b
    capabilities:
      apiVersions: [b.example/v1]
    asserts: [{notFailedTemplate: {}}]
"""


def test_a_suite_layers_values_files_then_the_suites_set_then_the_tests(tmp_path: Path) -> None:
    (tmp_path / "suite-values.yaml").write_text("shared: {level: suite-file, file: suite}\n")
    (tmp_path / "test-values.yaml").write_text("shared: {level: test-file, file: test}\nt: 1\n")
    suite = tmp_path / "layers_test.yaml"
    suite.write_text(SUITE)
    first, second = parity.load_cases("slurm", suite)
    assert first.id == "layers_test.yaml#0 only the suite's layers"
    assert first.values == {"shared": {"level": "suite", "file": "suite", "suite": True}}
    assert (first.release, first.namespace) == ("rel-a", "ns-a")
    # helm-unittest appends the suite's values files after the test's, so the suite's win.
    assert second.values == {
        "shared": {"level": "test", "file": "suite", "suite": True},
        "t": 1,
        "plain": "on",  # YAML 1.2, as helm-unittest reads it: 'on' is a string
        "date": "2024-01-02",
    }
    assert (second.release, second.namespace) == ("rel-b", "ns-a")
    # capabilities: the suite's Kubernetes version; the test's API versions, then the suite's
    assert first.helm_args() == [
        *("--namespace", "ns-a", "--kube-version", "1.30", "--api-versions", "a.example/v1")
    ]
    assert second.kube_version == "1.30"
    assert second.api_versions == ("b.example/v1", "a.example/v1")


def test_a_file_that_is_no_suite_is_an_error_that_names_it(tmp_path: Path) -> None:
    suite = tmp_path / "empty_test.yaml"
    suite.write_text("suite: nothing\n")
    with pytest.raises(parity.UpstreamError, match=r"empty_test\.yaml: no 'tests:' list"):
        parity.load_cases("slurm", suite)


def _cr(kind: str, name: str, spec: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def _deployment(deployment: str, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": deployment},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def test_only_fields_upstream_sets_count_and_zero_values_equal_absence() -> None:
    up = [_cr("Controller", "r-slurm", {"a": 1, "empty": {}, "none": None, "s": "", "l": []})]
    ours = [_cr("Controller", "r-slurm", {"a": 1, "extra": True})]
    assert parity.compare(up, ours, deployments=False) == []


def test_a_field_that_differs_or_is_missing_is_named_by_its_path() -> None:
    up = [_cr("NodeSet", "r-a", {"x": {"y": [1, {"z": "u"}]}, "w": 1}, **{"helm.sh/chart": "c"})]
    ours = [_cr("NodeSet", "r-a", {"x": {"y": [1, {"z": "o"}]}})]
    found = [str(d) for d in parity.compare(up, ours, deployments=False)]
    assert found == [
        'NodeSet/r-a metadata.labels["helm.sh/chart"]: upstream "c", ours unset',
        'NodeSet/r-a spec.x.y[1].z: upstream "u", ours "o"',
        "NodeSet/r-a spec.w: upstream 1, ours unset",
    ]


def test_objects_pair_by_name_then_by_release_prefix_then_the_one_left() -> None:
    up = [_cr("RestApi", "r-slurm", {}), _cr("NodeSet", "gpu", {}), _cr("NodeSet", "cpu", {})]
    ours = [
        _cr("RestApi", "r-slurm-cluster", {}),
        _cr("NodeSet", "r-x-gpu", {}),
        _cr("NodeSet", "r-x-cpu", {}),
        _cr("Token", "t", {}),
    ]
    found = [str(d) for d in parity.compare(up, ours, deployments=False)]
    assert found == [
        "NodeSet/gpu metadata.name: upstream gpu, ours r-x-gpu",
        "NodeSet/cpu metadata.name: upstream cpu, ours r-x-cpu",
        "RestApi/r-slurm metadata.name: upstream r-slurm, ours r-slurm-cluster",
        "Token/t: upstream does not render it, ours does",
    ]
    missing = parity.compare([_cr("LoginSet", "l", {})], [], deployments=False)
    assert [str(d) for d in missing] == ["LoginSet/l: upstream renders it, ours does not"]


def test_deployments_compare_image_flags_in_any_spelling_and_env_by_name() -> None:
    up = _deployment(
        "op",
        name="manager",
        image="i:1",
        args=["--a", "1", "--b=2", "--verbose"],
        env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
        ports=[{"containerPort": 1}],
    )
    same = _deployment(
        "op",
        name="manager",
        image="i:1",
        args=["--verbose", "--b", "2", "--a=1", "--more"],
        env=[{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}],
    )
    assert parity.compare([up], [same], deployments=True) == []
    assert parity.compare([up], [], deployments=False) == []
    other = _deployment("op", name="main", image="i:2", args=["--a=3"], env=[])
    found = [str(d) for d in parity.compare([up], [other], deployments=True)]
    assert found == [
        'Deployment/op containers.manager.image: upstream "i:1", ours "i:2"',
        'Deployment/op containers.manager.args["--a"][0]: upstream "1", ours "3"',
        'Deployment/op containers.manager.args["--b"]: upstream ["2"], ours unset',
        'Deployment/op containers.manager.args["--verbose"]: upstream [""], ours unset',
        'Deployment/op containers.manager.env.X.value: upstream "1", ours unset',
        'Deployment/op containers.manager.env.Y.value: upstream "2", ours unset',
    ]


def test_kept_names_are_upstreams_objects_ours_lacks_under_the_same_name() -> None:
    """Only kinds listed as kept count; an object upstream renders must exist in ours under its
    name (ours may render more); a Deployment's selector must equal upstream's; nothing is
    kept unless asked."""
    selector = {"matchLabels": {"app.kubernetes.io/name": "op"}}
    up = [
        _object("Service", "op-webhook"),
        _object("ServiceAccount", "r-op"),
        _object("ConfigMap", "only-upstream"),
        _object("Deployment", "op", selector=selector),
    ]
    ours = [
        _object("Service", "op-webhook"),
        _object("Service", "extra"),
        _object("ServiceAccount", "r-op-sa"),
        _object("Deployment", "op", selector={"matchLabels": {"app": "other"}}),
    ]
    kept = ("Service", "ServiceAccount", "Deployment")
    found = [str(d) for d in parity.compare(up, ours, deployments=False, kept=kept)]
    assert found == [
        "ServiceAccount/r-op: upstream renders it, ours does not",
        'Deployment/op identity.selector.matchLabels["app.kubernetes.io/name"]: upstream "op", '
        "ours unset",
        'Deployment/op identity.selector.matchLabels.app: upstream unset, ours "other"',
    ]
    ours[2] = _object("ServiceAccount", "r-op")
    ours[3] = _object("Deployment", "op", selector=selector)
    assert parity.compare(up, ours, deployments=False, kept=kept) == []
    assert parity.compare(up, [], deployments=False) == []


def test_an_intentional_difference_covers_kind_and_path_globs() -> None:
    entry = parity.Intentional("*", '*labels["helm.sh/chart"]', "names differ", ("slurm",))
    label = parity.Difference("Controller", "c", 'metadata.labels["helm.sh/chart"]', "a", "b")
    other = parity.Difference("Controller", "c", "spec.x", "a", "b")
    assert entry.covers(label)
    assert not entry.covers(other)
    assert all(i.reason.strip() for i in parity.load_intentional())


def test_an_intentional_difference_can_name_the_object() -> None:
    entry = parity.Intentional("Deployment", "containers.*.env.X*", "why", ("b",), "adm")
    assert entry.covers(parity.Difference("Deployment", "adm", "containers.a.env.X.value", "", ""))
    assert not entry.covers(parity.Difference("Deployment", "ctl", "containers.a.env.X", "", ""))
    assert entry.key == "Deployment/adm containers.*.env.X*"


def test_the_intentional_file_is_read_per_upstream_chart(tmp_path: Path) -> None:
    path = tmp_path / "meant.yaml"
    path.write_text(
        "slurm-bridge:\n  - {kind: Token, path: '', reason: ' ours  mints it '}\nslurm: []\n",
        encoding="utf-8",
    )
    assert parity.load_intentional(path) == (
        parity.Intentional("Token", "", "ours mints it", ("slurm-bridge",), "*"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("slurm-brige: []\n", "'slurm-brige' is not an upstream chart"),
        ("slurm: {kind: x}\n", "slurm must be a list of entries"),
        ("slurm:\n  - {kind: x, path: y}\n", "slurm[0]: 'reason' is missing"),
        ("slurm:\n  - {kind: x, path: y, reason: ' '}\n", "slurm[0].reason is empty"),
        ("slurm:\n  - {kind: x, path: y, reason: r, why: z}\n", "unknown key(s) why"),
        ("slurm:\n  - {kind: x, path: 1, reason: r}\n", "slurm[0].path: expected a string"),
    ],
)
def test_a_bad_intentional_file_names_the_entry_and_the_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "meant.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(parity.UpstreamError, match=re.escape(message)):
        parity.load_intentional(path)


ALL = ("*",)


def _object(kind: str, name: str, namespace: str | None = "ns", **spec: Any) -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "spec": spec}


def test_keeping_every_kind_compares_every_upstream_object_and_what_an_upgrade_keeps() -> None:
    """With every kind kept, an object upstream renders and ours does not is named, and so are a
    Service's selector (a label only ours selects on too) and clusterIP and a namespace; a
    cluster-scoped kind's namespace (which the API server ignores) and objects only ours renders
    are not differences."""
    up = [
        _object("Service", "ctl", selector={"app": "ctl"}, clusterIP="None"),
        _object("ConfigMap", "cfg"),
        _object("ClusterRole", "ctl"),
        _object("Secret", "tls"),
    ]
    ours = [
        _object("Service", "ctl", selector={"app": "ctl", "c": "x"}),
        _object("ConfigMap", "cfg", namespace="other"),
        _object("ClusterRole", "ctl", namespace=None),
        _object("Secret", "tls"),
        _object("NetworkPolicy", "extra"),
    ]
    assert parity.compare(up, ours, deployments=True) == []
    found = [str(d) for d in parity.compare(up, ours, deployments=True, kept=ALL)]
    assert found == [
        'Service/ctl identity.clusterIP: upstream "None", ours unset',
        'Service/ctl identity.selector.c: upstream unset, ours "x"',
        'ConfigMap/cfg identity.namespace: upstream "ns", ours "other"',
    ]
    found = [str(d) for d in parity.compare(up, ours[:2], deployments=True, kept=ALL)]
    assert found[-2:] == [
        "ClusterRole/ctl: upstream renders it, ours does not",
        "Secret/tls: upstream renders it, ours does not",
    ]


def test_names_compare_a_deployments_selector_account_and_mounts() -> None:
    def deployment(selector: str, account: str, config: str) -> dict[str, Any]:
        doc = _deployment("d", name="c", image="i")
        doc["spec"]["selector"] = {"matchLabels": {"app": selector}}
        pod = doc["spec"]["template"]["spec"]
        pod["serviceAccountName"] = account
        pod["volumes"] = [
            {"name": "a", "configMap": {"name": config}},
            {"name": "b", "secret": {"secretName": "tls"}},
        ]
        return doc

    up, same = deployment("d", "sa", "cfg"), deployment("d", "sa", "cfg")
    same["spec"]["template"]["spec"]["volumes"].reverse()  # volume order and names do not count
    assert parity.compare([up], [same], deployments=True, kept=ALL) == []
    other = deployment("x", "sa2", "cfg2")
    found = [str(d) for d in parity.compare([up], [other], deployments=True, kept=ALL)]
    assert found == [
        'Deployment/d identity.selector.matchLabels.app: upstream "d", ours "x"',
        'Deployment/d identity.serviceAccountName: upstream "sa", ours "sa2"',
        'Deployment/d identity.configMaps[0]: upstream "cfg", ours "cfg2"',
    ]


SCHEMA_ERROR = """\
Error: values don't meet the specifications of the schema(s) in the following chart(s):
slurm-cluster:
- at '/slurmKey': additional properties 'create' not allowed
- at '/partitions': validation failed
  - at '/partitions/all': additional properties 'configMap' not allowed
"""


def test_a_schema_refusal_gives_every_violation_sorted_and_no_grouping_line() -> None:
    assert client.HelmResult.failed(SCHEMA_ERROR).refusals() == [
        "schema: at '/partitions/all': additional properties 'configMap' not allowed",
        "schema: at '/slurmKey': additional properties 'create' not allowed",
    ]


def test_a_template_refusal_gives_its_first_line_past_helms_log_lines() -> None:
    stderr = 'level=INFO msg="warning: x"\nError: execution error at (c/t.yaml:1:2): boom\nmore\n'
    assert client.HelmResult.failed(stderr).refusals() == [
        "execution error at (c/t.yaml:1:2): boom"
    ]


def test_the_floor_file_is_checked_and_a_count_below_it_is_reported(tmp_path: Path) -> None:
    floor_file = tmp_path / "floor.yaml"
    floor_file.write_text("slurm: {accepted: 2, equal: 1}\n")
    floor = parity.load_floor(floor_file)
    report = parity.ChartReport("slurm", "slurm-cluster")
    report.outcomes = [parity.Outcome("a", "equal"), parity.Outcome("b", "different")]
    assert parity.below_floor(report, floor) == []
    report.outcomes[0].status = "not accepted"
    assert parity.below_floor(report, floor) == [
        "slurm: accepted 1 < floor 2",
        "slurm: equal 0 < floor 1",
    ]
    floor_file.write_text("slurm: {accepted: 2}\n")
    with pytest.raises(parity.UpstreamError, match="slurm must give exactly accepted and equal"):
        parity.load_floor(floor_file)
    floor_file.write_text("slurm-cluster: {accepted: 2, equal: 0}\n")
    with pytest.raises(parity.UpstreamError, match="'slurm-cluster' is not an upstream chart"):
        parity.load_floor(floor_file)


def test_a_folder_reference_gives_its_archive_and_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slurm-1.2.1.tgz").write_bytes(b"archive")
    monkeypatch.setenv(parity.REFERENCE_ENV, str(tmp_path))
    assert parity.upstream_chart("slurm") == tmp_path / "slurm-1.2.1.tgz"
    with pytest.raises(parity.UpstreamError, match=r"no slurm-bridge-1\.2\.1\.tgz there"):
        parity.upstream_chart("slurm-bridge")


def test_an_oci_reference_is_pulled_once_into_the_suite_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulls: list[tuple[str, ...]] = []

    class FakeHelm:
        def run(self, *args: str, check: bool = True) -> client.HelmResult:
            pulls.append(args)
            destination = Path(args[args.index("--destination") + 1])
            if "fails" not in args[1]:
                (destination / "slurm-1.2.1.tgz").write_bytes(b"pulled")
                return client.HelmResult(list(args), 0, "", "")
            return client.HelmResult(list(args), 1, "", "Error: unreachable")

    monkeypatch.setattr(client.Helm, "pinned", classmethod(lambda cls: FakeHelm()))
    monkeypatch.setenv("SLINKY_SUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(parity.REFERENCE_ENV, "oci://registry.example/charts/")
    first = parity.upstream_chart("slurm")
    assert parity.upstream_chart("slurm") == first
    assert first.read_bytes() == b"pulled"
    assert first.is_relative_to(tmp_path / "cache" / "upstream-charts")
    assert pulls == [
        ("pull", "oci://registry.example/charts/slurm", "--version", "1.2.1", "--destination",
         pulls[0][-1]),
    ]  # fmt: skip
    monkeypatch.setenv(parity.REFERENCE_ENV, "oci://fails.example/charts")
    with pytest.raises(parity.UpstreamError, match=r"Error: unreachable.*SLINKY_UPSTREAM_CHARTS"):
        parity.upstream_chart("slurm")
