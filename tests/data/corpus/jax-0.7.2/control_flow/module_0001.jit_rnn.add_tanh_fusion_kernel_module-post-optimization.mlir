module @add_tanh_fusion_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @add_tanh_fusion(%arg0: tensor<12xf32> {llvm.align = 64 : index, llvm.dereferenceable = 48 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<36xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.invariant, xla.slice_index = 1 : index}, %arg2: tensor<36xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.invariant, xla.slice_index = 2 : index}, %arg3: tensor<36xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.slice_index = 3 : index}) -> tensor<36xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %c12 = arith.constant 12 : index
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %0 = scf.for %arg4 = %c0 to %c3 step %c1 iter_args(%arg5 = %arg3) -> (tensor<36xf32>) {
      %1 = scf.for %arg6 = %c0 to %c12 step %c1 iter_args(%arg7 = %arg5) -> (tensor<36xf32>) {
        %2 = xla.apply_indexing #xla.indexing_map<"(d0, d1) -> (d0 * 12 + d1), domain: d0 in [0, 2], d1 in [0, 11]">(%arg4, %arg6)
        %extracted = tensor.extract %arg1[%2] : tensor<36xf32>
        %extracted_0 = tensor.extract %arg2[%2] : tensor<36xf32>
        %3 = arith.addf %extracted, %extracted_0 : f32
        %extracted_1 = tensor.extract %arg0[%arg6] : tensor<12xf32>
        %4 = arith.addf %3, %extracted_1 : f32
        %5 = math.tanh %4 : f32
        %inserted = tensor.insert %5 into %arg7[%2] : tensor<36xf32>
        scf.yield %inserted : tensor<36xf32>
      }
      scf.yield %1 : tensor<36xf32>
    } {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
    return %0 : tensor<36xf32>
  }
}