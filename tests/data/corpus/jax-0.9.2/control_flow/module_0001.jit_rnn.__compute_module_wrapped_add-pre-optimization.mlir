module @__compute_module_wrapped_add attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  xtile.entry_func @wrapped_add(%arg0: memref<i32>, %arg1: memref<i32>, %arg2: memref<i32>, %arg3: index) attributes {num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %0 = xtile.extract %arg0[] [] [] : memref<i32> -> tensor<i32>
    %1 = xtile.extract %arg1[] [] [] : memref<i32> -> tensor<i32>
    %2 = stablehlo.add %0, %1 : tensor<i32>
    xtile.insert %2 into %arg2[] [] [] : tensor<i32> -> memref<i32>
    xtile.return
  }
}