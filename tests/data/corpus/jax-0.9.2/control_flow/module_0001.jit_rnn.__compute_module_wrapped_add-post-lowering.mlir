module @__compute_module_wrapped_add attributes {xla.cpu_memory_region_name = "xla_cpu_emitter__tiled_emitter__hlo_opcode__fusion"} {
  llvm.func @wrapped_add(%arg0: !llvm.ptr) -> !llvm.ptr {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.mlir.constant(0 : index) : i64
    %2 = llvm.mlir.constant(1 : index) : i64
    %3 = llvm.getelementptr inbounds %arg0[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %4 = llvm.load %3 invariant : !llvm.ptr -> !llvm.ptr
    %5 = llvm.getelementptr inbounds %4[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %6 = llvm.load %5 invariant : !llvm.ptr -> !llvm.ptr
    %7 = llvm.getelementptr inbounds %4[1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %8 = llvm.load %7 invariant : !llvm.ptr -> !llvm.ptr
    %9 = llvm.getelementptr inbounds %4[2, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %10 = llvm.load %9 invariant : !llvm.ptr -> !llvm.ptr
    %11 = llvm.getelementptr inbounds %arg0[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %12 = llvm.load %11 : !llvm.ptr -> !llvm.ptr
    %13 = llvm.getelementptr inbounds %12[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %14 = llvm.load %13 invariant : !llvm.ptr -> i64
    %15 = llvm.intr.smax(%14, %1) {xla.range = [0 : index, 9223372036854775807 : index]} : (i64, i64) -> i64
    %16 = llvm.intr.smin(%15, %2) {xla.range = [0 : index, 1 : index]} : (i64, i64) -> i64
    llvm.br ^bb1(%16 : i64)
  ^bb1(%17: i64):  // 2 preds: ^bb0, ^bb2
    %18 = llvm.icmp "slt" %17, %2 : i64
    llvm.cond_br %18, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    llvm.call @wrapped_add_impl(%6, %6, %1, %8, %8, %1, %10, %10, %1, %17) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
    %19 = llvm.add %17, %2 : i64
    llvm.br ^bb1(%19 : i64)
  ^bb3:  // pred: ^bb1
    llvm.return %0 : !llvm.ptr
  }
  llvm.func internal @wrapped_add_impl(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: !llvm.ptr, %arg4: !llvm.ptr, %arg5: i64, %arg6: !llvm.ptr, %arg7: !llvm.ptr, %arg8: i64, %arg9: i64) attributes {always_inline, num_opaque_args = 0 : i32, xtile.tiling_info = #xtile.tiling_info<tile_count : 1, tiles_per_workgroup : 1>} {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.mlir.constant(1 : index) : i64
    %2 = llvm.alloca %1 x i32 : (i64) -> !llvm.ptr
    %3 = llvm.getelementptr %0[1] : (!llvm.ptr) -> !llvm.ptr, i32
    %4 = llvm.ptrtoint %3 : !llvm.ptr to i64
    %5 = llvm.mul %4, %1 : i64
    %6 = llvm.getelementptr %arg1[%arg2] : (!llvm.ptr, i64) -> !llvm.ptr, i32
    "llvm.intr.memcpy"(%2, %6, %5) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    %7 = llvm.load %2 : !llvm.ptr -> i32
    %8 = llvm.alloca %1 x i32 : (i64) -> !llvm.ptr
    %9 = llvm.getelementptr %arg4[%arg5] : (!llvm.ptr, i64) -> !llvm.ptr, i32
    "llvm.intr.memcpy"(%8, %9, %5) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    %10 = llvm.load %8 : !llvm.ptr -> i32
    %11 = llvm.add %7, %10 {xla.range = [-9223372036854775808 : index, 9223372036854775807 : index]} : i32
    %12 = llvm.alloca %1 x i32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
    llvm.store %11, %12 : i32, !llvm.ptr
    %13 = llvm.getelementptr %arg7[%arg8] : (!llvm.ptr, i64) -> !llvm.ptr, i32
    "llvm.intr.memcpy"(%13, %12, %5) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    llvm.return
  }
}