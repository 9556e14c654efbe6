module @wrapped_reduce_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @wrapped_reduce(%arg0: tensor<160xf32> {llvm.align = 64 : index, llvm.dereferenceable = 640 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<f32> {llvm.align = 64 : index, llvm.dereferenceable = 4 : index, xla.invariant, xla.slice_index = 1 : index}, %arg2: tensor<16xf32> {llvm.align = 64 : index, llvm.dereferenceable = 64 : index, xla.slice_index = 2 : index}) -> tensor<16xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %c16 = arith.constant 16 : index
    %c10 = arith.constant 10 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %extracted = tensor.extract %arg1[] : tensor<f32>
    %0 = scf.for %arg3 = %c0 to %c16 step %c1 iter_args(%arg4 = %arg2) -> (tensor<16xf32>) {
      %1 = scf.for %arg5 = %c0 to %c10 step %c1 iter_args(%arg6 = %extracted) -> (f32) {
        %2 = xla.apply_indexing #xla.indexing_map<"(d0, d1) -> (d0 * 10 + d1), domain: d0 in [0, 15], d1 in [0, 9]">(%arg3, %arg5)
        %extracted_0 = tensor.extract %arg0[%2] : tensor<160xf32>
        %3 = arith.addf %arg6, %extracted_0 fastmath<reassoc> : f32
        scf.yield %3 : f32
      }
      %inserted = tensor.insert %1 into %arg4[%arg3] : tensor<16xf32>
      scf.yield %inserted : tensor<16xf32>
    } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
    return %0 : tensor<16xf32>
  }
}