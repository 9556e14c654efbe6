module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  llvm.func @wrapped_scatter(%arg0: !llvm.ptr) -> !llvm.ptr attributes {frame_pointer = #llvm.framePointerKind<all>, passthrough = [["prefer-vector-width", "256"]], uwtable_kind = #llvm.uwtableKind<async>} {
    %0 = llvm.mlir.constant(10 : index) : i32
    %1 = llvm.mlir.constant(1 : index) : i32
    %2 = llvm.mlir.constant(0 : index) : i32
    %3 = llvm.mlir.constant(39 : index) : i32
    %4 = llvm.mlir.zero : !llvm.ptr
    %5 = llvm.getelementptr inbounds %arg0[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %6 = llvm.load %5 invariant : !llvm.ptr -> !llvm.ptr
    %7 = llvm.getelementptr inbounds %6[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %8 = llvm.load %7 invariant {llvm.align = 32 : index} : !llvm.ptr -> !llvm.ptr
    %9 = llvm.getelementptr inbounds %6[1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %10 = llvm.load %9 invariant {llvm.align = 32 : index} : !llvm.ptr -> !llvm.ptr
    %11 = llvm.getelementptr inbounds %6[2, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %12 = llvm.load %11 invariant {llvm.align = 32 : index} : !llvm.ptr -> !llvm.ptr
    llvm.br ^bb1(%2 : i32)
  ^bb1(%13: i32):  // 2 preds: ^bb0, ^bb4
    %14 = llvm.icmp "slt" %13, %0 : i32
    llvm.cond_br %14, ^bb2, ^bb5
  ^bb2:  // pred: ^bb1
    %15 = llvm.getelementptr inbounds %10[%13] : (!llvm.ptr, i32) -> !llvm.ptr, i32
    %16 = llvm.load %15 : !llvm.ptr -> i32
    %17 = llvm.icmp "ule" %16, %3 : i32
    llvm.cond_br %17, ^bb3, ^bb4
  ^bb3:  // pred: ^bb2
    %18 = llvm.getelementptr inbounds %12[%13] : (!llvm.ptr, i32) -> !llvm.ptr, f32
    %19 = llvm.load %18 : !llvm.ptr -> f32
    %20 = llvm.getelementptr inbounds %8[%16] : (!llvm.ptr, i32) -> !llvm.ptr, f32
    llvm.store %19, %20 : f32, !llvm.ptr
    llvm.br ^bb4
  ^bb4:  // 2 preds: ^bb2, ^bb3
    %21 = llvm.add %13, %1 : i32
    llvm.br ^bb1(%21 : i32)
  ^bb5:  // pred: ^bb1
    llvm.return %4 : !llvm.ptr
  }
}