"""``jax.experimental.serialize_executable``: a compiled function as bytes (``serialize``) and back
(``deserialize_and_load``). Never load bytes from an untrusted source."""
from kiln.frontend.driver.serialize_executable import deserialize_and_load as deserialize_and_load
from kiln.frontend.driver.serialize_executable import serialize as serialize

__all__ = ["deserialize_and_load", "serialize"]
