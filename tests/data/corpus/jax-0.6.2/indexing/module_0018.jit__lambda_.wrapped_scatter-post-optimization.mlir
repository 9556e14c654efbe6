module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  func.func @wrapped_scatter(%arg0: tensor<40xf32> {llvm.align = 64 : index, llvm.dereferenceable = 160 : index, xla.slice_index = -1 : index}, %arg1: tensor<10xi32> {llvm.align = 64 : index, llvm.dereferenceable = 40 : index, xla.slice_index = 0 : index}, %arg2: tensor<10xf32> {llvm.align = 64 : index, llvm.dereferenceable = 40 : index, xla.slice_index = 1 : index}, %arg3: tensor<40xf32> {llvm.align = 64 : index, llvm.dereferenceable = 160 : index, xla.slice_index = 3 : index}) -> tensor<40xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %c10 = arith.constant 10 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c39 = arith.constant 39 : index
    %0 = scf.for %arg4 = %c0 to %c10 step %c1 iter_args(%arg5 = %arg0) -> (tensor<40xf32>) {
      %extracted = tensor.extract %arg1[%arg4] : tensor<10xi32>
      %1 = arith.index_cast %extracted : i32 to index
      %2 = arith.cmpi ule, %1, %c39 : index
      %3 = scf.if %2 -> (tensor<40xf32>) {
        %extracted_0 = tensor.extract %arg2[%arg4] : tensor<10xf32>
        %inserted = tensor.insert %extracted_0 into %arg5[%1] : tensor<40xf32>
        scf.yield %inserted : tensor<40xf32>
      } else {
        scf.yield %arg5 : tensor<40xf32>
      }
      scf.yield %3 : tensor<40xf32>
    }
    return %0 : tensor<40xf32>
  }
}