module @__compute_module_wrapped_log attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  xtile.entry_func @wrapped_log(%arg0: memref<16xf32>, %arg1: memref<16xf32>, %arg2: index) attributes {num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %0 = xla.apply_indexing #xla.indexing_map<"(pid_0) -> (0), domain: pid_0 in [0, 0]">(%arg2)
    %1 = xtile.extract %arg0[%0] [16] [1] : memref<16xf32> -> tensor<16xf32>
    %2 = math.log %1 : tensor<16xf32>
    %3 = xla.apply_indexing #xla.indexing_map<"(pid_0) -> (0), domain: pid_0 in [0, 0]">(%arg2)
    xtile.insert %2 into %arg1[%3] [16] [1] : tensor<16xf32> -> memref<16xf32>
    xtile.return
  }
}