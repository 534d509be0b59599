"""kiln.profiler: JAX's ``jax.profiler`` (traces for TensorBoard/Perfetto, annotations, memory profiles, traces
read back with ProfileData)."""
from kiln.frontend.driver.profiler import ProfileData as ProfileData
from kiln.frontend.driver.profiler import ProfileEvent as ProfileEvent
from kiln.frontend.driver.profiler import ProfileOptions as ProfileOptions
from kiln.frontend.driver.profiler import ProfilePlane as ProfilePlane
from kiln.frontend.driver.profiler import StepTraceAnnotation as StepTraceAnnotation
from kiln.frontend.driver.profiler import TraceAnnotation as TraceAnnotation
from kiln.frontend.driver.profiler import annotate_function as annotate_function
from kiln.frontend.driver.profiler import device_memory_profile as device_memory_profile
from kiln.frontend.driver.profiler import register_subprocess as register_subprocess
from kiln.frontend.driver.profiler import save_device_memory_profile as save_device_memory_profile
from kiln.frontend.driver.profiler import start_server as start_server
from kiln.frontend.driver.profiler import start_trace as start_trace
from kiln.frontend.driver.profiler import stop_server as stop_server
from kiln.frontend.driver.profiler import stop_trace as stop_trace
from kiln.frontend.driver.profiler import trace as trace

__all__ = [
    "annotate_function", "device_memory_profile", "ProfileData", "ProfileEvent", "ProfileOptions", "ProfilePlane",
    "register_subprocess", "save_device_memory_profile", "start_server",
    "start_trace", "StepTraceAnnotation", "stop_server", "stop_trace", "trace", "TraceAnnotation",
]
