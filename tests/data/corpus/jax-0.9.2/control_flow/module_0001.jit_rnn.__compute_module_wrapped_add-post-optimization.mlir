module @__compute_module_wrapped_add attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  func.func @wrapped_add(%arg0: !xla_cpu.call_frame) -> !xla_cpu.error {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %0 = xla_cpu.load %arg0, 0 : memref<i32>
    %1 = xla_cpu.load %arg0, 1 : memref<i32>
    %2 = xla_cpu.load %arg0, 2 : memref<i32>
    %3 = xla_cpu.extract_workgroup_id %arg0, x
    %4 = arith.maxsi %3, %c0 : index
    %5 = arith.minsi %4, %c1 : index
    %6 = arith.addi %4, %c1 overflow<nsw, nuw> : index
    %7 = arith.minsi %6, %c1 : index
    scf.for %arg1 = %5 to %7 step %c1 {
      func.call @wrapped_add_impl(%0, %1, %2, %arg1) : (memref<i32>, memref<i32>, memref<i32>, index) -> ()
    }
    %8 = xla_cpu.success : !xla_cpu.error
    return %8 : !xla_cpu.error
  }
  func.func @wrapped_add_impl(%arg0: memref<i32>, %arg1: memref<i32>, %arg2: memref<i32>, %arg3: index) attributes {always_inline, llvm.linkage = #llvm.linkage<internal>, num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %alloca = memref.alloca() : memref<i32>
    memref.copy %arg0, %alloca : memref<i32> to memref<i32>
    %0 = memref.load %alloca[] : memref<i32>
    %alloca_0 = memref.alloca() : memref<i32>
    memref.copy %arg1, %alloca_0 : memref<i32> to memref<i32>
    %1 = memref.load %alloca_0[] : memref<i32>
    %2 = arith.addi %0, %1 : i32
    %alloca_1 = memref.alloca() {alignment = 64 : i64} : memref<i32>
    memref.store %2, %alloca_1[] : memref<i32>
    memref.copy %alloca_1, %arg2 : memref<i32> to memref<i32>
    return
  }
}