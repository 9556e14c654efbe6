module @wrapped_scatter attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__cpu_scatter_fusion__hlo_opcode__fusion", xla.extra_backend_options = #xla<extra_backend_options["xla_cpu_disable_loop_unrolling"]>} {
  func.func @wrapped_scatter(%arg0: tensor<2x8x16x16xf32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = -1 : index}, %arg1: tensor<1024x4xi32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = 0 : index}, %arg2: tensor<1024x1x1x1x1xf32> {llvm.align = 64 : index, llvm.dereferenceable = 4096 : index, xla.slice_index = 1 : index}, %arg3: tensor<2x8x16x16xf32> {llvm.align = 64 : index, llvm.dereferenceable = 16384 : index, xla.slice_index = 3 : index}) -> tensor<2x8x16x16xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %0 = xla.workgroup_id  x {xla.range = [0 : index, 0 : index]}
    %xla_loop = xla.loop (%0)[%i, %j, %k] -> (%ra, %rb, %rc, %rd, %re) in #xla.indexing_map<"(thread_id)[index_id, vector_id, vector_element_id] -> (index_id, 0, 0, 0, 0), domain: thread_id in [0, 0], index_id in [0, 1023], vector_id in [0, 0], vector_element_id in [0, 0]"> iter_args(%iter = %arg0) -> (tensor<2x8x16x16xf32>) {
      %c0 = arith.constant 0 : index
      %true = arith.constant true
      %c0_0 = arith.constant 0 : index
      %pure_call = xla.pure_call @wrapped_scatter_computation_param_1_39(%arg0, %arg1, %arg2, %ra, %c0_0) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index) -> i32
      %1 = arith.index_cast %pure_call : i32 to index
      %c1 = arith.constant 1 : index
      %2 = arith.cmpi ule, %1, %c1 : index
      %3 = arith.andi %true, %2 : i1
      %c1_1 = arith.constant 1 : index
      %pure_call_2 = xla.pure_call @wrapped_scatter_computation_param_1_39(%arg0, %arg1, %arg2, %ra, %c1_1) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index) -> i32
      %4 = arith.index_cast %pure_call_2 : i32 to index
      %c7 = arith.constant 7 : index
      %5 = arith.cmpi ule, %4, %c7 : index
      %6 = arith.andi %3, %5 : i1
      %c2 = arith.constant 2 : index
      %pure_call_3 = xla.pure_call @wrapped_scatter_computation_param_1_39(%arg0, %arg1, %arg2, %ra, %c2) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index) -> i32
      %7 = arith.index_cast %pure_call_3 : i32 to index
      %c15 = arith.constant 15 : index
      %8 = arith.cmpi ule, %7, %c15 : index
      %9 = arith.andi %6, %8 : i1
      %c3 = arith.constant 3 : index
      %pure_call_4 = xla.pure_call @wrapped_scatter_computation_param_1_39(%arg0, %arg1, %arg2, %ra, %c3) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index) -> i32
      %10 = arith.index_cast %pure_call_4 : i32 to index
      %c15_5 = arith.constant 15 : index
      %11 = arith.cmpi ule, %10, %c15_5 : index
      %12 = arith.andi %9, %11 : i1
      %13 = scf.if %12 -> (tensor<2x8x16x16xf32>) {
        %pure_call_6 = xla.pure_call @wrapped_scatter_computation_param_2_32(%arg0, %arg1, %arg2, %ra, %rb, %rc, %rd, %re) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index, index, index, index) -> f32
        %14 = arith.addi %rb, %1 : index
        %15 = arith.addi %rc, %4 : index
        %16 = arith.addi %rd, %7 : index
        %17 = arith.addi %re, %10 : index
        %pure_call_7 = xla.pure_call @wrapped_scatter_computation_param_0_38(%arg0, %arg1, %arg2, %14, %15, %16, %17) : (tensor<2x8x16x16xf32>, tensor<1024x4xi32>, tensor<1024x1x1x1x1xf32>, index, index, index, index) -> f32
        %18 = arith.addf %pure_call_7, %pure_call_6 : f32
        %inserted = tensor.insert %18 into %iter[%14, %15, %16, %17] : tensor<2x8x16x16xf32>
        scf.yield %inserted : tensor<2x8x16x16xf32>
      } else {
        scf.yield %iter : tensor<2x8x16x16xf32>
      }
      xla.yield %13 : tensor<2x8x16x16xf32>
    }
    return %xla_loop : tensor<2x8x16x16xf32>
  }
  func.func private @wrapped_scatter_computation_param_2_32(%arg0: tensor<2x8x16x16xf32>, %arg1: tensor<1024x4xi32>, %arg2: tensor<1024x1x1x1x1xf32>, %arg3: index {xla.range = [0 : index, 1023 : index]}, %arg4: index {xla.range = [0 : index, 0 : index]}, %arg5: index {xla.range = [0 : index, 0 : index]}, %arg6: index {xla.range = [0 : index, 0 : index]}, %arg7: index {xla.range = [0 : index, 0 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg2[%arg3, %arg4, %arg5, %arg6, %arg7] : tensor<1024x1x1x1x1xf32>
    return %extracted : f32
  }
  func.func private @wrapped_scatter_computation_param_1_39(%arg0: tensor<2x8x16x16xf32>, %arg1: tensor<1024x4xi32>, %arg2: tensor<1024x1x1x1x1xf32>, %arg3: index {xla.range = [0 : index, 1023 : index]}, %arg4: index {xla.range = [0 : index, 3 : index]}) -> i32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg1[%arg3, %arg4] : tensor<1024x4xi32>
    return %extracted : i32
  }
  func.func private @wrapped_scatter_computation_param_0_38(%arg0: tensor<2x8x16x16xf32>, %arg1: tensor<1024x4xi32>, %arg2: tensor<1024x1x1x1x1xf32>, %arg3: index {xla.range = [0 : index, 1 : index]}, %arg4: index {xla.range = [0 : index, 7 : index]}, %arg5: index {xla.range = [0 : index, 15 : index]}, %arg6: index {xla.range = [0 : index, 15 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg0[%arg3, %arg4, %arg5, %arg6] : tensor<2x8x16x16xf32>
    return %extracted : f32
  }
  func.func private @AddComputation_120_add_123(%arg0: f32, %arg1: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
    %0 = arith.addf %arg0, %arg1 : f32
    return %0 : f32
  }
  func.func private @wrapped_scatter_computation__epilogue__scatter_2(%arg0: tensor<2x8x16x16xf32>, %arg1: tensor<1024x4xi32>, %arg2: tensor<1024x1x1x1x1xf32>, %arg3: index {xla.range = [0 : index, 1 : index]}, %arg4: index {xla.range = [0 : index, 7 : index]}, %arg5: index {xla.range = [0 : index, 15 : index]}, %arg6: index {xla.range = [0 : index, 15 : index]}, %arg7: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    return %arg7 : f32
  }
}