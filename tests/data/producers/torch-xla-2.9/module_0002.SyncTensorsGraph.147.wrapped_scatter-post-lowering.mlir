module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__cpu_scatter_fusion__hlo_opcode__fusion", xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  llvm.func @wrapped_scatter(%arg0: !llvm.ptr) -> !llvm.ptr attributes {frame_pointer = #llvm.framePointerKind<all>, passthrough = [["prefer-vector-width", "256"]], uwtable_kind = #llvm.uwtableKind<async>} {
    %0 = llvm.mlir.zero : !llvm.ptr
    %1 = llvm.getelementptr inbounds %arg0[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %2 = llvm.load %1 invariant : !llvm.ptr -> !llvm.ptr
    %3 = llvm.getelementptr inbounds %2[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %4 = llvm.load %3 invariant dereferenceable<bytes = 16384> : !llvm.ptr -> !llvm.ptr
    %5 = llvm.getelementptr inbounds %2[1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %6 = llvm.load %5 invariant dereferenceable<bytes = 16384> : !llvm.ptr -> !llvm.ptr
    %7 = llvm.getelementptr inbounds %2[2, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %8 = llvm.load %7 invariant dereferenceable<bytes = 4096> : !llvm.ptr -> !llvm.ptr
    %9 = llvm.getelementptr inbounds %2[3, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelArg", (ptr, i64)>
    %10 = llvm.load %9 invariant dereferenceable<bytes = 16384> : !llvm.ptr -> !llvm.ptr
    %11 = llvm.getelementptr inbounds %arg0[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"XLA_CPU_KernelCallFrame", (ptr, ptr, i64, ptr)>
    %12 = llvm.load %11 : !llvm.ptr -> !llvm.ptr
    %13 = llvm.getelementptr inbounds %12[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %14 = llvm.load %13 invariant : !llvm.ptr -> i64
    %15 = llvm.trunc %14 overflow<nsw> : i64 to i32
    %16 = llvm.getelementptr inbounds %12[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %17 = llvm.load %16 invariant : !llvm.ptr -> i64
    %18 = llvm.trunc %17 overflow<nsw> : i64 to i32
    %19 = llvm.getelementptr inbounds %12[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<"kernel_dim3", (i64, i64, i64)>
    %20 = llvm.load %19 invariant : !llvm.ptr -> i64
    %21 = llvm.trunc %20 overflow<nsw> : i64 to i32
    llvm.call @wrapped_scatter_wrapped(%4, %6, %8, %10, %15, %18, %21) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32) -> ()
    llvm.return %0 : !llvm.ptr
  }
  llvm.func internal @wrapped_scatter_wrapped(%arg0: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, llvm.noalias}, %arg2: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 4096 : index, llvm.noalias}, %arg3: !llvm.ptr {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, llvm.noalias}, %arg4: i32, %arg5: i32, %arg6: i32) attributes {always_inline, sym_visibility = "private", xla.backend_kind = #xla.backend_kind<cpu>, xla.cpu.is_wrapped, xla.entry} {
    %0 = llvm.mlir.constant(16 : index) : i32
    %1 = llvm.mlir.constant(256 : index) : i32
    %2 = llvm.mlir.constant(2048 : index) : i32
    %3 = llvm.mlir.constant(3 : index) : i32
    %4 = llvm.mlir.constant(2 : index) : i32
    %5 = llvm.mlir.constant(4 : index) : i32
    %6 = llvm.mlir.constant(15 : index) : i32
    %7 = llvm.mlir.constant(7 : index) : i32
    %8 = llvm.mlir.constant(1 : index) : i32
    %9 = llvm.mlir.constant(0 : index) : i32
    %10 = llvm.mlir.constant(1024 : index) : i32
    llvm.br ^bb1(%9 : i32)
  ^bb1(%11: i32):  // 2 preds: ^bb0, ^bb4
    %12 = llvm.icmp "slt" %11, %10 : i32
    llvm.cond_br %12, ^bb2, ^bb5
  ^bb2:  // pred: ^bb1
    %13 = llvm.mul %11, %5 overflow<nsw> : i32
    %14 = llvm.getelementptr inbounds %arg1[0, %13] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4096 x i32>
    %15 = llvm.load %14 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : !llvm.ptr -> i32
    %16 = llvm.icmp "ule" %15, %8 : i32
    %17 = llvm.add %13, %8 overflow<nsw> : i32
    %18 = llvm.getelementptr inbounds %arg1[0, %17] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4096 x i32>
    %19 = llvm.load %18 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : !llvm.ptr -> i32
    %20 = llvm.icmp "ule" %19, %7 : i32
    %21 = llvm.and %16, %20 : i1
    %22 = llvm.add %13, %4 overflow<nsw> : i32
    %23 = llvm.getelementptr inbounds %arg1[0, %22] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4096 x i32>
    %24 = llvm.load %23 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : !llvm.ptr -> i32
    %25 = llvm.icmp "ule" %24, %6 : i32
    %26 = llvm.and %21, %25 : i1
    %27 = llvm.add %13, %3 overflow<nsw> : i32
    %28 = llvm.getelementptr inbounds %arg1[0, %27] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4096 x i32>
    %29 = llvm.load %28 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : !llvm.ptr -> i32
    %30 = llvm.icmp "ule" %29, %6 : i32
    %31 = llvm.and %26, %30 : i1
    llvm.cond_br %31, ^bb3, ^bb4
  ^bb3:  // pred: ^bb2
    %32 = llvm.getelementptr inbounds %arg2[0, %11] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<1024 x f32>
    %33 = llvm.load %32 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : !llvm.ptr -> f32
    %34 = llvm.mul %15, %2 overflow<nsw> : i32
    %35 = llvm.mul %19, %1 overflow<nsw> : i32
    %36 = llvm.add %34, %35 overflow<nsw> : i32
    %37 = llvm.mul %24, %0 overflow<nsw> : i32
    %38 = llvm.add %36, %37 overflow<nsw> : i32
    %39 = llvm.add %38, %29 overflow<nsw> : i32
    %40 = llvm.getelementptr inbounds %arg0[0, %39] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4096 x f32>
    %41 = llvm.load %40 {noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : !llvm.ptr -> f32
    %42 = llvm.fadd %41, %33 : f32
    llvm.store %42, %40 {alias_scopes = [#llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">], noalias_scopes = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : f32, !llvm.ptr
    llvm.br ^bb4
  ^bb4:  // 2 preds: ^bb2, ^bb3
    %43 = llvm.add %11, %8 : i32
    llvm.br ^bb1(%43 : i32)
  ^bb5:  // pred: ^bb1
    llvm.return
  }
}