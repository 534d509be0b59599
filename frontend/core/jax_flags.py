"""The names of every configuration flag of JAX 0.10.2 (data, not code).

Generated from JAX 0.10.2's ``jax.config.values`` (its flag registry, 133 names) with a
throwaway script on 2026-11-23; regenerate the same way for a newer JAX. ``kiln.config.update`` accepts
each of these names: it applies the ones kiln implements (``config.JAX_TO_KILN``) and warns once for the
others instead of raising, so that a JAX program's configuration lines run unchanged.
"""

JAX_FLAG_NAMES = frozenset((
    'check_vma', 'eager_constant_folding', 'jax2tf_associative_scan_reductions',
    'jax2tf_default_native_serialization', 'jax_allow_f16_reductions', 'jax_array_garbage_collection_guard',
    'jax_auto_pcast', 'jax_backend_target', 'jax_bcoo_cusparse_lowering', 'jax_captured_constants_report_frames',
    'jax_captured_constants_warn_bytes', 'jax_check_proxy_envs', 'jax_check_static_indices',
    'jax_check_tracer_leaks', 'jax_compilation_cache_check_contents', 'jax_compilation_cache_dir',
    'jax_compilation_cache_expect_pgle', 'jax_compilation_cache_include_metadata_in_key',
    'jax_compilation_cache_max_size', 'jax_compiler_detailed_logging_min_ops', 'jax_compiler_enable_remat_pass',
    'jax_cpu_collectives_implementation', 'jax_cpu_enable_async_dispatch',
    'jax_cpu_get_global_topology_timeout_minutes', 'jax_cpu_get_local_topology_timeout_minutes',
    'jax_cross_host_transfer_socket_address', 'jax_cross_host_transfer_timeout_seconds',
    'jax_cross_host_transfer_transfer_size', 'jax_cross_host_transport_addresses', 'jax_cuda_visible_devices',
    'jax_custom_vjp3', 'jax_debug_infs', 'jax_debug_key_reuse', 'jax_debug_leaked_clients_on_clear_backends',
    'jax_debug_log_modules', 'jax_debug_nans', 'jax_default_device', 'jax_default_matmul_precision',
    'jax_default_prng_impl', 'jax_disable_bwd_checks', 'jax_disable_jit', 'jax_disable_most_optimizations',
    'jax_disable_vmap_shmap_error', 'jax_disallow_mesh_context_manager', 'jax_distributed_debug',
    'jax_dump_ir_modes', 'jax_dump_ir_to', 'jax_embedded_constants_max_bytes', 'jax_enable_checks',
    'jax_enable_compilation_cache', 'jax_enable_custom_prng', 'jax_enable_pgle', 'jax_enable_preemption_service',
    'jax_enable_recoverability', 'jax_enable_x64', 'jax_error_checking_behavior_divide',
    'jax_error_checking_behavior_nan', 'jax_error_checking_behavior_oob', 'jax_exec_time_optimization_effort',
    'jax_experimental_unsafe_xla_runtime_errors', 'jax_explain_cache_misses', 'jax_explicit_x64_dtypes',
    'jax_export_calling_convention_version', 'jax_export_ignore_forward_compatibility',
    'jax_force_dcn_cross_host_transfers', 'jax_high_dynamic_range_gumbel',
    'jax_hlo_source_file_canonicalization_regex', 'jax_include_debug_info_in_dumps',
    'jax_include_full_tracebacks_in_locations', 'jax_legacy_prng_key', 'jax_log_checkpoint_residuals',
    'jax_log_compiles', 'jax_logging_level', 'jax_memory_fitting_effort', 'jax_memory_fitting_level',
    'jax_mock_gpu_topology', 'jax_mosaic_allow_hlo', 'jax_mutable_array_checks', 'jax_no_execution',
    'jax_no_tracing', 'jax_num_cpu_devices', 'jax_numpy_dtype_promotion', 'jax_numpy_rank_promotion',
    'jax_oneapi_visible_devices', 'jax_optimization_level', 'jax_pallas_enable_debug_checks',
    'jax_pallas_poison_buffers', 'jax_pallas_use_mosaic_gpu', 'jax_pallas_verbose_errors',
    'jax_persistent_cache_enable_xla_caches', 'jax_persistent_cache_min_compile_time_secs',
    'jax_persistent_cache_min_entry_size_bytes', 'jax_pgle_aggregation_percentile', 'jax_pgle_profiling_runs',
    'jax_pjrt_client_create_options', 'jax_platform_name', 'jax_platforms', 'jax_pprint_use_color',
    'jax_ragged_dot_use_gpu_pallas_triton_lowering', 'jax_ragged_dot_use_ragged_dot_instruction',
    'jax_raise_persistent_cache_errors', 'jax_random_seed_offset', 'jax_refs_to_pins', 'jax_remat3',
    'jax_remove_custom_partitioning_ptr_from_cache_key', 'jax_remove_size_one_mesh_axis_from_type',
    'jax_rocm_visible_devices', 'jax_scan3', 'jax_send_traceback_to_runtime', 'jax_serialization_version',
    'jax_share_binary_between_hosts', 'jax_share_binary_between_hosts_timeout_ms', 'jax_softmax_custom_jvp',
    'jax_sort_devices_by_process_index', 'jax_source_url_schema', 'jax_thread_guard',
    'jax_threefry_gpu_kernel_lowering', 'jax_threefry_partitionable', 'jax_traceback_filtering',
    'jax_traceback_in_locations_limit', 'jax_tracer_error_num_traceback_frames', 'jax_transfer_guard',
    'jax_transfer_guard_device_to_device', 'jax_transfer_guard_device_to_host', 'jax_transfer_guard_host_to_device',
    'jax_use_direct_linearize', 'jax_use_emit_pipeline_primitive', 'jax_use_magma', 'jax_use_shardy_partitioner',
    'jax_use_simplified_jaxpr_constants', 'jax_xla_backend', 'jax_xla_profile_version', 'mock_num_gpu_processes'
))
