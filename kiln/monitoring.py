"""kiln.monitoring: listeners for the events kiln and libraries record (as ``jax.monitoring``)."""
from kiln.frontend.core.monitoring import clear_event_listeners as clear_event_listeners
from kiln.frontend.core.monitoring import record_event as record_event
from kiln.frontend.core.monitoring import record_event_duration_secs as record_event_duration_secs
from kiln.frontend.core.monitoring import record_event_time_span as record_event_time_span
from kiln.frontend.core.monitoring import record_scalar as record_scalar
from kiln.frontend.core.monitoring import register_event_duration_secs_listener as register_event_duration_secs_listener
from kiln.frontend.core.monitoring import register_event_listener as register_event_listener
from kiln.frontend.core.monitoring import register_event_time_span_listener as register_event_time_span_listener
from kiln.frontend.core.monitoring import register_scalar_listener as register_scalar_listener
from kiln.frontend.core.monitoring import unregister_event_duration_listener as unregister_event_duration_listener
from kiln.frontend.core.monitoring import unregister_event_listener as unregister_event_listener
from kiln.frontend.core.monitoring import unregister_event_time_span_listener as unregister_event_time_span_listener
from kiln.frontend.core.monitoring import unregister_scalar_listener as unregister_scalar_listener

__all__ = [
    "clear_event_listeners", "record_event", "record_event_duration_secs", "record_event_time_span", "record_scalar",
    "register_event_duration_secs_listener", "register_event_listener", "register_event_time_span_listener",
    "register_scalar_listener", "unregister_event_duration_listener", "unregister_event_listener",
    "unregister_event_time_span_listener", "unregister_scalar_listener",
]
