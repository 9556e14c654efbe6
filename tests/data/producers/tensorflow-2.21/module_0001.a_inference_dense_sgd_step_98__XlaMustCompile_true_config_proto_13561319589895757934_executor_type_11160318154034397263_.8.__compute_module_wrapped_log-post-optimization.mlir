module @__compute_module_wrapped_log attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  func.func @wrapped_log(%arg0: !xla_cpu.call_frame) -> !xla_cpu.error {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %0 = xla_cpu.load %arg0, 0 : memref<16xf32>
    %1 = xla_cpu.load %arg0, 1 : memref<16xf32>
    %2 = xla_cpu.extract_workgroup_id %arg0,  x
    %3 = arith.maxsi %2, %c0 : index
    %4 = arith.minsi %3, %c1 : index
    %5 = arith.addi %3, %c1 overflow<nsw, nuw> : index
    %6 = arith.minsi %5, %c1 : index
    scf.for %arg1 = %4 to %6 step %c1 {
      func.call @wrapped_log_impl(%0, %1, %arg1) : (memref<16xf32>, memref<16xf32>, index) -> ()
    }
    %7 = xla_cpu.success : !xla_cpu.error
    return %7 : !xla_cpu.error
  }
  func.func @wrapped_log_impl(%arg0: memref<16xf32>, %arg1: memref<16xf32>, %arg2: index) attributes {always_inline, llvm.linkage = #llvm.linkage<internal>, num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %0 = ub.poison : f32
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c0 = arith.constant 0 : index
    %alloca = memref.alloca() : memref<16xf32>
    memref.copy %arg0, %alloca : memref<16xf32> to memref<16xf32>
    %alloca_0 = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
    scf.for %arg3 = %c0 to %c16 step %c8 {
      %1 = vector.transfer_read %alloca[%arg3], %0 {in_bounds = [true]} : memref<16xf32>, vector<8xf32>
      %2 = math.log %1 : vector<8xf32>
      vector.transfer_write %2, %alloca_0[%arg3] {in_bounds = [true]} : vector<8xf32>, memref<16xf32>
    }
    memref.copy %alloca_0, %arg1 : memref<16xf32> to memref<16xf32>
    return
  }
}