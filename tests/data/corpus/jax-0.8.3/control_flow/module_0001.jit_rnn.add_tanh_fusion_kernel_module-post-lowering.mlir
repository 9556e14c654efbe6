module @add_tanh_fusion_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  llvm.func @xla.tanh.f32(f32) -> f32 attributes {sym_visibility = "private"}
  llvm.func @add_tanh_fusion(%arg0: !llvm.ptr) -> !llvm.ptr attributes {frame_pointer = #llvm.framePointerKind<all>, passthrough = [["prefer-vector-width", "256"]], uwtable_kind = #llvm.uwtableKind<async>} {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.getelementptr inbounds %arg0[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %2 = llvm.load %1 invariant : !llvm.ptr -> !llvm.ptr
    %3 = llvm.getelementptr inbounds %2[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %4 = llvm.load %3 invariant dereferenceable<bytes = 48> : !llvm.ptr -> !llvm.ptr
    %5 = llvm.getelementptr inbounds %2[1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %6 = llvm.load %5 invariant dereferenceable<bytes = 144> : !llvm.ptr -> !llvm.ptr
    %7 = llvm.getelementptr inbounds %2[2, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %8 = llvm.load %7 invariant dereferenceable<bytes = 144> : !llvm.ptr -> !llvm.ptr
    %9 = llvm.getelementptr inbounds %2[3, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %10 = llvm.load %9 invariant dereferenceable<bytes = 144> : !llvm.ptr -> !llvm.ptr
    %11 = llvm.getelementptr inbounds %arg0[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %12 = llvm.load %11 : !llvm.ptr -> !llvm.ptr
    %13 = llvm.getelementptr inbounds %12[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %14 = llvm.load %13 invariant : !llvm.ptr -> i64
    %15 = llvm.getelementptr inbounds %12[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %16 = llvm.load %15 invariant : !llvm.ptr -> i64
    %17 = llvm.getelementptr inbounds %12[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %18 = llvm.load %17 invariant : !llvm.ptr -> i64
    llvm.call @add_tanh_fusion_wrapped(%4, %6, %8, %10, %14, %16, %18) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
    llvm.return %0 : !llvm.ptr
  }
  llvm.func internal @add_tanh_fusion_wrapped(%arg0: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 48 : index, llvm.noalias, xla.invariant}, %arg1: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, llvm.noalias, xla.invariant}, %arg2: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, llvm.noalias, xla.invariant}, %arg3: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, llvm.noalias}, %arg4: i64, %arg5: i64, %arg6: i64) attributes {always_inline, sym_visibility = "private", xla.backend_kind = #xla.backend_kind<cpu>, xla.cpu.is_wrapped, xla.entry} {
    %0 = llvm.mlir.constant(1 : index) : i64
    %1 = llvm.mlir.constant(0 : index) : i64
    %2 = llvm.mlir.constant(3 : index) : i64
    %3 = llvm.mlir.constant(12 : index) : i64
    llvm.br ^bb1(%1 : i64)
  ^bb1(%4: i64):  // 2 preds: ^bb0, ^bb5
    %5 = llvm.icmp "slt" %4, %2 : i64
    llvm.cond_br %5, ^bb2, ^bb6
  ^bb2:  // pred: ^bb1
    %6 = llvm.mul %4, %3 overflow<nsw> : i64
    llvm.br ^bb3(%1 : i64)
  ^bb3(%7: i64):  // 2 preds: ^bb2, ^bb4
    %8 = llvm.icmp "slt" %7, %3 : i64
    llvm.cond_br %8, ^bb4, ^bb5
  ^bb4:  // pred: ^bb3
    %9 = llvm.add %6, %7 overflow<nsw> : i64
    %10 = llvm.getelementptr inbounds %arg1[0, %9] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<36 x f32>
    %11 = llvm.load %10 invariant : !llvm.ptr -> f32
    %12 = llvm.getelementptr inbounds %arg2[0, %9] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<36 x f32>
    %13 = llvm.load %12 invariant : !llvm.ptr -> f32
    %14 = llvm.fadd %11, %13 : f32
    %15 = llvm.getelementptr inbounds %arg0[0, %7] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<12 x f32>
    %16 = llvm.load %15 invariant : !llvm.ptr -> f32
    %17 = llvm.fadd %14, %16 : f32
    %18 = llvm.call @xla.tanh.f32(%17) : (f32) -> f32
    %19 = llvm.getelementptr inbounds %arg3[0, %9] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<36 x f32>
    llvm.store %18, %19 : f32, !llvm.ptr
    %20 = llvm.add %7, %0 : i64
    llvm.br ^bb3(%20 : i64)
  ^bb5:  // pred: ^bb3
    %21 = llvm.add %4, %0 : i64
    llvm.br ^bb1(%21 : i64) {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
  ^bb6:  // pred: ^bb1
    llvm.return
  }
}