module @wrapped_broadcast_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @wrapped_broadcast(%arg0: tensor<f32> {llvm.align = 64 : index, llvm.dereferenceable = 4 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<9xf32> {llvm.align = 64 : index, llvm.dereferenceable = 36 : index, xla.slice_index = 1 : index}) -> tensor<9xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c9 = arith.constant 9 : index
    %extracted = tensor.extract %arg0[] : tensor<f32>
    %0 = scf.for %arg2 = %c0 to %c9 step %c1 iter_args(%arg3 = %arg1) -> (tensor<9xf32>) {
      %inserted = tensor.insert %extracted into %arg3[%arg2] : tensor<9xf32>
      scf.yield %inserted : tensor<9xf32>
    }
    return %0 : tensor<9xf32>
  }
}