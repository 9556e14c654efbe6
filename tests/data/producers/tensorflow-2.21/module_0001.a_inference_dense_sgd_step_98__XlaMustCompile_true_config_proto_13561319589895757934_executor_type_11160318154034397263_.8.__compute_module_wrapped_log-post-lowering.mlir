module @__compute_module_wrapped_log attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  llvm.func @wrapped_log(%arg0: !llvm.ptr) -> !llvm.ptr {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.mlir.constant(1 : index) : i64
    %2 = llvm.mlir.constant(16 : index) : i64
    %3 = llvm.mlir.constant(0 : index) : i64
    %4 = llvm.getelementptr inbounds %arg0[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %5 = llvm.load %4 invariant : !llvm.ptr -> !llvm.ptr
    %6 = llvm.getelementptr inbounds %5[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %7 = llvm.load %6 invariant : !llvm.ptr -> !llvm.ptr
    %8 = llvm.getelementptr inbounds %5[1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %9 = llvm.load %8 invariant : !llvm.ptr -> !llvm.ptr
    %10 = llvm.getelementptr inbounds %arg0[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %11 = llvm.load %10 : !llvm.ptr -> !llvm.ptr
    %12 = llvm.getelementptr inbounds %11[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %13 = llvm.load %12 invariant : !llvm.ptr -> i64
    %14 = llvm.intr.smax(%13, %3) {xla.range = [0 : index, 9223372036854775807 : index]} : (i64, i64) -> i64
    %15 = llvm.intr.smin(%14, %1) {xla.range = [0 : index, 1 : index]} : (i64, i64) -> i64
    llvm.br ^bb1(%15 : i64)
  ^bb1(%16: i64):  // 2 preds: ^bb0, ^bb2
    %17 = llvm.icmp "slt" %16, %1 : i64
    llvm.cond_br %17, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    llvm.call @wrapped_log_impl(%7, %7, %3, %2, %1, %9, %9, %3, %2, %1, %16) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
    %18 = llvm.add %16, %1 : i64
    llvm.br ^bb1(%18 : i64)
  ^bb3:  // pred: ^bb1
    llvm.return %0 : !llvm.ptr
  }
  llvm.func internal @wrapped_log_impl(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, %arg5: !llvm.ptr, %arg6: !llvm.ptr, %arg7: i64, %arg8: i64, %arg9: i64, %arg10: i64) attributes {always_inline, num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.mlir.constant(1 : index) : i64
    %2 = llvm.mlir.constant(0 : index) : i64
    %3 = llvm.mlir.constant(16 : index) : i64
    %4 = llvm.mlir.constant(8 : index) : i64
    %5 = llvm.alloca %3 x f32 : (i64) -> !llvm.ptr
    %6 = llvm.mul %arg3, %1 : i64
    %7 = llvm.getelementptr %0[1] : (!llvm.ptr) -> !llvm.ptr, f32
    %8 = llvm.ptrtoint %7 : !llvm.ptr to i64
    %9 = llvm.mul %6, %8 : i64
    %10 = llvm.getelementptr %arg1[%arg2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    "llvm.intr.memcpy"(%5, %10, %9) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    %11 = llvm.alloca %3 x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
    llvm.br ^bb1(%2 : i64)
  ^bb1(%12: i64):  // 2 preds: ^bb0, ^bb2
    %13 = llvm.icmp "slt" %12, %3 : i64
    llvm.cond_br %13, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    %14 = llvm.getelementptr %5[%12] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %15 = llvm.load %14 {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
    %16 = llvm.intr.log(%15) : (vector<8xf32>) -> vector<8xf32>
    %17 = llvm.getelementptr %11[%12] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %16, %17 {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
    %18 = llvm.add %12, %4 : i64
    llvm.br ^bb1(%18 : i64)
  ^bb3:  // pred: ^bb1
    %19 = llvm.mul %3, %1 : i64
    %20 = llvm.mul %19, %8 : i64
    %21 = llvm.getelementptr %arg6[%arg7] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    "llvm.intr.memcpy"(%21, %11, %20) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    llvm.return
  }
}