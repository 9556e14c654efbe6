module @add_tanh_fusion_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @add_tanh_fusion(%arg0: tensor<12xf32> {llvm.align = 64 : index, llvm.dereferenceable = 48 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<3x12xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.invariant, xla.slice_index = 1 : index}, %arg2: tensor<3x12xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.invariant, xla.slice_index = 2 : index}, %arg3: tensor<3x12xf32> {llvm.align = 64 : index, llvm.dereferenceable = 144 : index, xla.slice_index = 3 : index}) -> tensor<3x12xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %0 = xla.workgroup_id x {xla.range = [0 : index, 0 : index]}
    %1 = xla.workgroup_id y {xla.range = [0 : index, 0 : index]}
    %2 = xla.workgroup_id z {xla.range = [0 : index, 0 : index]}
    %3 = scf.forall (%arg4, %arg5, %arg6) in (1, 1, 1) shared_outs(%arg7 = %arg3) -> (tensor<3x12xf32>) {
      %xla_loop = xla.loop (%arg4, %arg5, %arg6, %0, %1, %2)[%i, %j] -> (%ra, %rb) in #xla.indexing_map<"(th_x, th_y, th_z, bl_x, bl_y, bl_z)[s0, s1] -> (s0, s1), domain: th_x in [0, 0], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], s0 in [0, 2], s1 in [0, 11]"> iter_args(%iter = %arg7) -> (tensor<3x12xf32>) {
        %pure_call = xla.pure_call @fused_computation_1_tanh_2(%arg0, %arg1, %arg2, %ra, %rb) : (tensor<12xf32>, tensor<3x12xf32>, tensor<3x12xf32>, index, index) -> f32
        %inserted = tensor.insert %pure_call into %iter[%ra, %rb] : tensor<3x12xf32>
        xla.yield %inserted : tensor<3x12xf32>
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %xla_loop into %arg7[0, 0] [3, 12] [1, 1] : tensor<3x12xf32> into tensor<3x12xf32>
      }
    }
    return %3 : tensor<3x12xf32>
  }
  func.func private @fused_computation_1_tanh_2(%arg0: tensor<12xf32>, %arg1: tensor<3x12xf32>, %arg2: tensor<3x12xf32>, %arg3: index {xla.range = [0 : index, 2 : index]}, %arg4: index {xla.range = [0 : index, 11 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
    %extracted = tensor.extract %arg1[%arg3, %arg4] : tensor<3x12xf32>
    %extracted_0 = tensor.extract %arg2[%arg3, %arg4] : tensor<3x12xf32>
    %0 = arith.addf %extracted, %extracted_0 : f32
    %extracted_1 = tensor.extract %arg0[%arg4] : tensor<12xf32>
    %1 = arith.addf %0, %extracted_1 : f32
    %2 = math.tanh %1 : f32
    return %2 : f32
  }
}