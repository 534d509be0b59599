"""kiln.image: image resampling (as ``jax.image``)."""
from kiln.frontend.image import ResizeMethod as ResizeMethod
from kiln.frontend.image import resize as resize
from kiln.frontend.image import scale_and_translate as scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
