module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__cpu_scatter_fusion__hlo_opcode__fusion", xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  func.func @wrapped_scatter(%arg0: tensor<4096xf32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = -1 : index}, %arg1: tensor<4096xi32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = 0 : index}, %arg2: tensor<1024xf32> {llvm.align = 64 : index, llvm.dereferenceable = 4096 : index, xla.slice_index = 1 : index}, %arg3: tensor<4096xf32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = 3 : index}) -> tensor<4096xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %c1024 = arith.constant 1024 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c15 = arith.constant 15 : index
    %0 = scf.for %arg4 = %c0 to %c1024 step %c1 iter_args(%arg5 = %arg0) -> (tensor<4096xf32>) {
      %1 = xla.apply_indexing #xla.indexing_map<"(d0) -> (d0 * 4), domain: d0 in [0, 1023]">(%arg4)
      %extracted = tensor.extract %arg1[%1] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : tensor<4096xi32>
      %2 = arith.index_cast %extracted : i32 to index
      %3 = arith.cmpi ule, %2, %c1 : index
      %4 = xla.apply_indexing #xla.indexing_map<"(d0) -> (d0 * 4 + 1), domain: d0 in [0, 1023]">(%arg4)
      %extracted_0 = tensor.extract %arg1[%4] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : tensor<4096xi32>
      %5 = arith.index_cast %extracted_0 : i32 to index
      %6 = arith.cmpi ule, %5, %c7 : index
      %7 = arith.andi %3, %6 : i1
      %8 = xla.apply_indexing #xla.indexing_map<"(d0) -> (d0 * 4 + 2), domain: d0 in [0, 1023]">(%arg4)
      %extracted_1 = tensor.extract %arg1[%8] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : tensor<4096xi32>
      %9 = arith.index_cast %extracted_1 : i32 to index
      %10 = arith.cmpi ule, %9, %c15 : index
      %11 = arith.andi %7, %10 : i1
      %12 = xla.apply_indexing #xla.indexing_map<"(d0) -> (d0 * 4 + 3), domain: d0 in [0, 1023]">(%arg4)
      %extracted_2 = tensor.extract %arg1[%12] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">]} : tensor<4096xi32>
      %13 = arith.index_cast %extracted_2 : i32 to index
      %14 = arith.cmpi ule, %13, %c15 : index
      %15 = arith.andi %11, %14 : i1
      %16 = scf.if %15 -> (tensor<4096xf32>) {
        %extracted_3 = tensor.extract %arg2[%arg4] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : tensor<1024xf32>
        %17 = xla.apply_indexing #xla.indexing_map<"(d0, d1, d2, d3) -> (d0 * 2048 + d1 * 256 + d2 * 16 + d3), domain: d0 in [0, 1], d1 in [0, 7], d2 in [0, 15], d3 in [0, 15]">(%2, %5, %9, %13)
        %extracted_4 = tensor.extract %arg0[%17] {llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : tensor<4096xf32>
        %18 = arith.addf %extracted_4, %extracted_3 : f32
        %inserted = tensor.insert %18 into %arg5[%17] {alias_scopes = [#llvm.alias_scope<id = distinct[3]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=-1">], llvm.noalias = [#llvm.alias_scope<id = distinct[0]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=3">, #llvm.alias_scope<id = distinct[2]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=1">, #llvm.alias_scope<id = distinct[4]<>, domain = <id = distinct[1]<>>, description = "xla.slice_index=0">]} : tensor<4096xf32>
        scf.yield %inserted : tensor<4096xf32>
      } else {
        scf.yield %arg5 : tensor<4096xf32>
      }
      scf.yield %16 : tensor<4096xf32>
    }
    return %0 : tensor<4096xf32>
  }
}