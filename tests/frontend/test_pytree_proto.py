"""PyTreeDef.serialize_using_proto / deserialize_using_proto (JAX's): tree structures of tuples, lists, dicts with
string keys and None as jaxlib's PyTreeDef protocol buffer, read back equal; the other node types and keys are
refused with a message, as JAX refuses them. Where JAX is installed, the bytes are JAX's and each library reads the
other's."""
import collections
import pickle

import pytest

import kiln
from kiln.tree_util import PyTreeDef, default_registry

Point = collections.namedtuple("Point", "x y")

STRUCTURES = [
    {"a": [1, (2, None)], "b": 3},
    (),
    [],
    {},
    None,
    7,
    [[[]], ((),), {"z": None, "y": [1, 2, 3]}],
    {"params": {"w": 1.0, "b": 2.0}, "opt": ({"mu": 0, "nu": 0}, 5)},
]


@pytest.mark.parametrize("tree", STRUCTURES, ids=repr)
def test_round_trip(tree):
    treedef = kiln.tree.structure(tree)
    data = treedef.serialize_using_proto()
    assert isinstance(data, bytes)
    back = PyTreeDef.deserialize_using_proto(default_registry, data)
    assert back == treedef and back.num_leaves == treedef.num_leaves
    leaves = kiln.tree.leaves(tree)
    assert back.unflatten(leaves) == kiln.tree.unflatten(treedef, leaves)


def test_different_structures_give_different_bytes():
    datas = {kiln.tree.structure(t).serialize_using_proto() for t in STRUCTURES}
    assert len(datas) == len(STRUCTURES)
    assert (kiln.tree.structure({"a": 1, "b": 2}).serialize_using_proto()
            != kiln.tree.structure({"a": 1, "c": 2}).serialize_using_proto())


def test_user_nodes_and_other_keys_are_refused():
    for tree in [collections.OrderedDict(a=1), Point(1, 2), [collections.defaultdict(list, a=[1])]]:
        with pytest.raises(ValueError, match="is a user-defined node, which protocol buffers cannot hold.*pickle"):
            kiln.tree.structure(tree).serialize_using_proto()
    with pytest.raises(ValueError, match=r"keys \[1, 2\]: only string keys are supported"):
        kiln.tree.structure({"outer": {1: "a", 2: "b"}}).serialize_using_proto()
    treedef = kiln.tree.structure(Point(1, 2))  # pickle takes them
    assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_bad_data_and_registry():
    with pytest.raises(ValueError, match="deserialize_using_proto: the data is not a serialized tree structure"):
        PyTreeDef.deserialize_using_proto(default_registry, b"not a proto")
    with pytest.raises(TypeError, match="data must be bytes, got str"):
        PyTreeDef.deserialize_using_proto(default_registry, "text")
    with pytest.raises(TypeError, match="registry must be kiln.tree_util.default_registry"):
        PyTreeDef.deserialize_using_proto(object(), kiln.tree.structure([1]).serialize_using_proto())


@pytest.mark.parametrize("tree", STRUCTURES, ids=repr)
def test_same_bytes_as_jax(tree):
    jax = pytest.importorskip("jax")
    data = kiln.tree.structure(tree).serialize_using_proto()
    assert data == jax.tree.structure(tree).serialize_using_proto()
    theirs = jax.tree_util.PyTreeDef.deserialize_using_proto(jax.tree_util.default_registry, data)
    assert theirs == jax.tree.structure(tree)
