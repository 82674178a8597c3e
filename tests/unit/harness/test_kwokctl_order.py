"""kwokctl v0.8.0 files each repeated ``--extra-args=<component>=...`` under the index of the
component's first flag among all ``--extra-args`` rather than among the components
(``mutationComponentPatches`` in sigs.k8s.io/kwok v0.8.0), and panics ("index out of range")
when that index is past the components' list. The model below is that loop, read from kwok's
source; :func:`kwokctl_order` must hand it flags it files correctly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slinky_harness.k8s.cluster import kwokctl_order

COMPONENTS = ["kube-apiserver", "kwok-controller", "kube-scheduler", "kube-controller-manager"]


def kwok_v080_patches(args: list[str]) -> dict[str, list[str]]:
    """kwokctl v0.8.0's filing of ``--extra-args`` (IndexError where kwok panics)."""
    patches: list[tuple[str, list[str]]] = []
    first_index: dict[str, int] = {}
    extra = [a.removeprefix("--extra-args=") for a in args if a.startswith("--extra-args=")]
    for i, arg in enumerate(extra):
        component, flag = arg.split("=", 1)
        if component in first_index:
            patches[first_index[component]][1].append(flag)  # kwok's index: i, not len(patches)
            continue
        patches.append((component, [flag]))
        first_index[component] = i
    return {component: flags for component, flags in patches}


def test_the_model_fails_as_kwok_does_on_the_order_that_broke_ci() -> None:
    """The arguments a fresh-clone run gave kwokctl before this fix: kwokctl panicked."""
    args = [
        "--extra-args=kube-controller-manager=leader-elect=false",
        "--extra-args=kube-scheduler=leader-elect=false",
        "--extra-args=kwok-controller=manage-all-nodes=false",
        "--extra-args=kwok-controller=manage-nodes-with-annotation-selector=k=v",
        "--extra-args=kube-apiserver=kubelet-preferred-address-types=InternalIP",
        "--extra-args=kube-apiserver=disable-admission-plugins=X",
    ]
    with pytest.raises(IndexError):
        kwok_v080_patches(args)
    filed = kwok_v080_patches(kwokctl_order(args))
    assert filed["kube-apiserver"] == [
        "kubelet-preferred-address-types=InternalIP",
        "disable-admission-plugins=X",
    ]


@given(
    st.lists(
        st.one_of(
            st.tuples(st.sampled_from(COMPONENTS), st.integers(0, 9)).map(
                lambda c: f"--extra-args={c[0]}=flag{c[1]}=v"
            ),
            st.sampled_from(["--disable=kube-scheduler", "--timeout=60s"]),
        ),
        max_size=12,
    )
)
def test_kwok_files_every_flag_under_its_component_in_order(args: list[str]) -> None:
    """Invariant: after :func:`kwokctl_order`, kwok v0.8.0 files each component's flags under
    that component, all of them, in the order given; other arguments keep their places."""
    expected: dict[str, list[str]] = {}
    for arg in args:
        if arg.startswith("--extra-args="):
            component, flag = arg.removeprefix("--extra-args=").split("=", 1)
            expected.setdefault(component, []).append(flag)
    ordered = kwokctl_order(args)
    assert kwok_v080_patches(ordered) == expected
    assert [a for a in ordered if not a.startswith("--extra-args=")] == [
        a for a in args if not a.startswith("--extra-args=")
    ]
    assert [i for i, a in enumerate(ordered) if not a.startswith("--extra-args=")] == [
        i for i, a in enumerate(args) if not a.startswith("--extra-args=")
    ]
