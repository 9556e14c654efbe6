module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  func.func @wrapped_scatter(%arg0: tensor<40xf32> {llvm.align = 64 : index, llvm.dereferenceable = 160 : index, xla.slice_index = -1 : index}, %arg1: tensor<10x1xi32> {llvm.align = 64 : index, llvm.dereferenceable = 40 : index, xla.slice_index = 0 : index}, %arg2: tensor<10x1xf32> {llvm.align = 64 : index, llvm.dereferenceable = 40 : index, xla.slice_index = 1 : index}, %arg3: tensor<40xf32> {llvm.align = 64 : index, llvm.dereferenceable = 160 : index, xla.slice_index = 3 : index}) -> tensor<40xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %0 = xla.workgroup_id  x {xla.range = [0 : index, 0 : index]}
    %xla_loop = xla.loop (%0)[%i, %j, %k] -> (%ra, %rb) in #xla.indexing_map<"(thread_id)[index_id, vector_id, vector_element_id] -> (index_id, 0), domain: thread_id in [0, 0], index_id in [0, 9], vector_id in [0, 0], vector_element_id in [0, 0]"> iter_args(%iter = %arg0) -> (tensor<40xf32>) {
      %c0 = arith.constant 0 : index
      %true = arith.constant true
      %c0_0 = arith.constant 0 : index
      %pure_call = xla.pure_call @wrapped_scatter_computation_param_1_4(%arg0, %arg1, %arg2, %ra, %c0_0) : (tensor<40xf32>, tensor<10x1xi32>, tensor<10x1xf32>, index, index) -> i32
      %1 = arith.index_cast %pure_call : i32 to index
      %c39 = arith.constant 39 : index
      %2 = arith.cmpi ule, %1, %c39 : index
      %3 = arith.andi %true, %2 : i1
      %4 = scf.if %3 -> (tensor<40xf32>) {
        %pure_call_1 = xla.pure_call @wrapped_scatter_computation_param_2_3(%arg0, %arg1, %arg2, %ra, %rb) : (tensor<40xf32>, tensor<10x1xi32>, tensor<10x1xf32>, index, index) -> f32
        %5 = arith.addi %rb, %1 : index
        %pure_call_2 = xla.pure_call @wrapped_scatter_computation_param_0_3(%arg0, %arg1, %arg2, %5) : (tensor<40xf32>, tensor<10x1xi32>, tensor<10x1xf32>, index) -> f32
        %inserted = tensor.insert %pure_call_1 into %iter[%5] : tensor<40xf32>
        scf.yield %inserted : tensor<40xf32>
      } else {
        scf.yield %iter : tensor<40xf32>
      }
      xla.yield %4 : tensor<40xf32>
    }
    return %xla_loop : tensor<40xf32>
  }
  func.func private @wrapped_scatter_computation_param_2_3(%arg0: tensor<40xf32>, %arg1: tensor<10x1xi32>, %arg2: tensor<10x1xf32>, %arg3: index {xla.range = [0 : index, 9 : index]}, %arg4: index {xla.range = [0 : index, 0 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg2[%arg3, %arg4] : tensor<10x1xf32>
    return %extracted : f32
  }
  func.func private @wrapped_scatter_computation_param_1_4(%arg0: tensor<40xf32>, %arg1: tensor<10x1xi32>, %arg2: tensor<10x1xf32>, %arg3: index {xla.range = [0 : index, 9 : index]}, %arg4: index {xla.range = [0 : index, 0 : index]}) -> i32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg1[%arg3, %arg4] : tensor<10x1xi32>
    return %extracted : i32
  }
  func.func private @wrapped_scatter_computation_param_0_3(%arg0: tensor<40xf32>, %arg1: tensor<10x1xi32>, %arg2: tensor<10x1xf32>, %arg3: index {xla.range = [0 : index, 39 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg0[%arg3] : tensor<40xf32>
    return %extracted : f32
  }
  func.func private @region_0_23_Arg_1_22(%arg0: f32, %arg1: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    return %arg1 : f32
  }
  func.func private @region_0_23_Arg_0_21(%arg0: f32, %arg1: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    return %arg0 : f32
  }
  func.func private @wrapped_scatter_computation__epilogue__scatter_5(%arg0: tensor<40xf32>, %arg1: tensor<10x1xi32>, %arg2: tensor<10x1xf32>, %arg3: index {xla.range = [0 : index, 39 : index]}, %arg4: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
    return %arg4 : f32
  }
}