module @add_reduce_fusion_kernel_module attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i32>, xla.cpu_memory_region_name = "xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"} {
  func.func @add_reduce_fusion(%arg0: tensor<16x10xf32> {llvm.align = 64 : index, llvm.dereferenceable = 640 : index, xla.invariant, xla.slice_index = 0 : index}, %arg1: tensor<10xf32> {llvm.align = 64 : index, llvm.dereferenceable = 40 : index, xla.invariant, xla.slice_index = 1 : index}, %arg2: tensor<16xf32> {llvm.align = 64 : index, llvm.dereferenceable = 64 : index, xla.slice_index = 2 : index}) -> tensor<16xf32> attributes {xla.backend_kind = #xla.backend_kind<cpu>, xla.entry} {
    %0 = xla.workgroup_id  x {xla.range = [0 : index, 0 : index]}
    %1 = xla.workgroup_id  y {xla.range = [0 : index, 0 : index]}
    %2 = xla.workgroup_id  z {xla.range = [0 : index, 0 : index]}
    %3 = scf.forall (%arg3, %arg4, %arg5) in (1, 1, 1) shared_outs(%arg6 = %arg2) -> (tensor<16xf32>) {
      %xla_loop = xla.loop (%arg3, %arg4, %arg5, %0, %1, %2)[%i] -> (%ra) in #xla.indexing_map<"(th_x, th_y, th_z, bl_x, bl_y, bl_z)[s0] -> (s0), domain: th_x in [0, 0], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], s0 in [0, 15]"> iter_args(%iter = %arg6) -> (tensor<16xf32>) {
        %pure_call = xla.pure_call @fused_computation_2_Softmax_8(%arg0, %arg1, %ra) : (tensor<16x10xf32>, tensor<10xf32>, index) -> f32
        %inserted = tensor.insert %pure_call into %iter[%ra] : tensor<16xf32>
        xla.yield %inserted : tensor<16xf32>
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %xla_loop into %arg6[0] [16] [1] : tensor<16xf32> into tensor<16xf32>
      }
    }
    return %3 : tensor<16xf32>
  }
  func.func private @fused_computation_2_Softmax_8(%arg0: tensor<16x10xf32>, %arg1: tensor<10xf32>, %arg2: index {xla.range = [0 : index, 15 : index]}) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
    %cst = arith.constant 0xFF800000 : f32
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c10 = arith.constant 10 : index
    %0 = scf.for %arg3 = %c0 to %c10 step %c1 iter_args(%arg4 = %cst) -> (f32) {
      %true = arith.constant true
      %c0_0 = arith.constant 0 : index
      %c15 = arith.constant 15 : index
      %1 = arith.cmpi sge, %arg2, %c0_0 : index
      %2 = arith.cmpi sle, %arg2, %c15 : index
      %3 = arith.andi %1, %2 : i1
      %4 = arith.andi %true, %3 : i1
      %5 = scf.if %4 -> (f32) {
        %extracted = tensor.extract %arg0[%arg2, %arg3] : tensor<16x10xf32>
        %extracted_1 = tensor.extract %arg1[%arg3] : tensor<10xf32>
        %6 = arith.addf %extracted, %extracted_1 : f32
        %7 = func.call @region_0_1_Softmax_7(%arg4, %6) {xla.is_reduction} : (f32, f32) -> f32
        scf.yield %7 : f32
      } else {
        scf.yield %arg4 : f32
      }
      scf.yield %5 : f32
    }
    return %0 : f32
  }
  func.func private @region_0_1_Softmax_7(%arg0: f32, %arg1: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
    %0 = arith.maximumf %arg0, %arg1 : f32
    return %0 : f32
  }
}