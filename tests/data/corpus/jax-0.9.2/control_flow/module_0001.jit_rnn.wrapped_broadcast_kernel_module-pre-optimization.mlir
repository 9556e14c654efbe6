module @wrapped_broadcast_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @wrapped_broadcast(%arg0: tensor<f32> {llvm.align = 64 : index, llvm.dereferenceable = 4 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<9xf32> {llvm.align = 64 : index, llvm.dereferenceable = 36 : index, xla.slice_index = 1 : index}) -> tensor<9xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %0 = xla.workgroup_id x {xla.range = [0 : index, 0 : index]}
    %1 = xla.workgroup_id y {xla.range = [0 : index, 0 : index]}
    %2 = xla.workgroup_id z {xla.range = [0 : index, 0 : index]}
    %3 = scf.forall (%arg2, %arg3, %arg4) in (1, 1, 1) shared_outs(%arg5 = %arg1) -> (tensor<9xf32>) {
      %xla_loop = xla.loop (%arg2, %arg3, %arg4, %0, %1, %2)[%i] -> (%ra) in #xla.indexing_map<"(th_x, th_y, th_z, bl_x, bl_y, bl_z)[s0] -> (s0), domain: th_x in [0, 0], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], s0 in [0, 8]"> iter_args(%iter = %arg5) -> (tensor<9xf32>) {
        %pure_call = xla.pure_call @wrapped_broadcast_computation_broadcast_2(%arg0, %ra) : (tensor<f32>, index) -> f32
        %inserted = tensor.insert %pure_call into %iter[%ra] : tensor<9xf32>
        xla.yield %inserted : tensor<9xf32>
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %xla_loop into %arg5[0] [9] [1] : tensor<9xf32> into tensor<9xf32>
      }
    }
    return %3 : tensor<9xf32>
  }
  func.func private @wrapped_broadcast_computation_broadcast_2(%arg0: tensor<f32>, %arg1: index {xla.range = [0 : index, 8 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, no_compute = true} {
    %extracted = tensor.extract %arg0[] : tensor<f32>
    return %extracted : f32
  }
}