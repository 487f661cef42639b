#map = affine_map<(d0, d1, d2) -> ()>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<() -> ()>
#map3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map5 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map6 = affine_map<(d0, d1) -> (d0, d1)>
#map7 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map8 = affine_map<(d0, d1) -> ()>
#map9 = affine_map<(d0, d1, d2) -> (d2, d0)>
#map10 = affine_map<(d0, d1) -> (d1, d0)>
"builtin.module"() <{sym_name = "jit_step"}> ({
  "func.func"() <{function_type = (tensor<4x16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<f32>, tensor<4x16x16xf32>), sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4x16x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>):
    %0 = "arith.constant"() <{value = 7.812500e-03 : f32}> : () -> f32
    %1 = "arith.constant"() <{value = dense<1.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %2 = "arith.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %3 = "arith.constant"() <{value = 1.280000e+02 : f32}> : () -> f32
    %4 = "arith.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %5 = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %6 = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32
    %7 = "arith.constant"() <{value = 3 : index}> : () -> index
    %8 = "arith.constant"() <{value = 0 : index}> : () -> index
    %9 = "arith.constant"() <{value = 4 : i32}> : () -> i32
    %10 = "arith.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %11 = "arith.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %12 = "tensor.empty"() : () -> tensor<4x8x16xf32>
    %13 = "linalg.generic"(%11, %12) <{indexing_maps = [#map, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg108: f32, %arg109: f32):
      "linalg.yield"(%arg108) : (f32) -> ()
    }) : (tensor<f32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %14:4 = "stablehlo.while"(%arg0, %10, %arg1, %13) ({
    ^bb0(%arg102: tensor<4x16x16xf32>, %arg103: tensor<i32>, %arg104: tensor<8x16xf32>, %arg105: tensor<4x8x16xf32>):
      %105 = "tensor.empty"() : () -> tensor<i1>
      %106 = "linalg.generic"(%arg103, %105) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg106: i32, %arg107: i1):
        %107 = "arith.cmpi"(%arg106, %9) <{predicate = 2 : i64}> : (i32, i32) -> i1
        "linalg.yield"(%107) : (i1) -> ()
      }) : (tensor<i32>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%106) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg87: tensor<4x16x16xf32>, %arg88: tensor<i32>, %arg89: tensor<8x16xf32>, %arg90: tensor<4x8x16xf32>):
      %86 = "tensor.extract"(%arg88) : (tensor<i32>) -> i32
      %87 = "arith.index_cast"(%86) : (i32) -> index
      %88 = "arith.maxsi"(%87, %8) : (index, index) -> index
      %89 = "arith.minsi"(%88, %7) : (index, index) -> index
      %90 = "tensor.extract_slice"(%arg87, %89) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 16, 16>, static_strides = array<i64: 1, 1, 1>}> : (tensor<4x16x16xf32>, index) -> tensor<1x16x16xf32>
      %91 = "tensor.collapse_shape"(%90) <{reassociation = [[0, 1], [2]]}> : (tensor<1x16x16xf32>) -> tensor<16x16xf32>
      %92 = "tensor.empty"() : () -> tensor<8x16xf32>
      %93 = "linalg.fill"(%6, %92) <{operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg100: f32, %arg101: f32):
        "linalg.yield"(%arg100) : (f32) -> ()
      }) : (f32, tensor<8x16xf32>) -> tensor<8x16xf32>
      %94 = "linalg.matmul"(%arg89, %91, %93) <{indexing_maps = [#map3, #map4, #map5], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg97: f32, %arg98: f32, %arg99: f32):
        %103 = "arith.mulf"(%arg97, %arg98) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        %104 = "arith.addf"(%arg99, %103) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%104) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %95 = "linalg.generic"(%94, %92) <{indexing_maps = [#map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg95: f32, %arg96: f32):
        %102 = "math.tanh"(%arg95) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32
        "linalg.yield"(%102) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %96 = "tensor.empty"() : () -> tensor<1x8x16xf32>
      %97 = "linalg.generic"(%arg89, %96) <{indexing_maps = [#map7, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg93: f32, %arg94: f32):
        "linalg.yield"(%arg93) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
      %98 = "tensor.insert_slice"(%97, %arg90, %89) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 8, 16>, static_strides = array<i64: 1, 1, 1>}> : (tensor<1x8x16xf32>, tensor<4x8x16xf32>, index) -> tensor<4x8x16xf32>
      %99 = "tensor.empty"() : () -> tensor<i32>
      %100 = "linalg.generic"(%arg88, %99) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg91: i32, %arg92: i32):
        %101 = "arith.addi"(%arg91, %5) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
        "linalg.yield"(%101) : (i32) -> ()
      }) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%arg87, %100, %95, %98) : (tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x8x16xf32>) -> ()
    }) : (tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x8x16xf32>)
    %15 = "tensor.empty"() : () -> tensor<8x16xf32>
    %16 = "linalg.generic"(%14#2, %arg2, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg84: f32, %arg85: f32, %arg86: f32):
      %85 = "arith.subf"(%arg84, %arg85) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%85) : (f32) -> ()
    }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %17 = "linalg.generic"(%16, %16, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg81: f32, %arg82: f32, %arg83: f32):
      %84 = "arith.mulf"(%arg81, %arg82) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%84) : (f32) -> ()
    }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %18 = "linalg.generic"(%4, %15) <{indexing_maps = [#map8, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg79: f32, %arg80: f32):
      "linalg.yield"(%arg79) : (f32) -> ()
    }) : (tensor<f32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %19 = "linalg.generic"(%18, %16, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg76: f32, %arg77: f32, %arg78: f32):
      %83 = "arith.mulf"(%arg76, %arg77) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%83) : (f32) -> ()
    }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %20 = "tensor.empty"() : () -> tensor<f32>
    %21 = "linalg.fill"(%6, %20) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg74: f32, %arg75: f32):
      "linalg.yield"(%arg74) : (f32) -> ()
    }) : (f32, tensor<f32>) -> tensor<f32>
    %22 = "linalg.generic"(%17, %21) <{indexing_maps = [#map6, #map8], iterator_types = [#linalg.iterator_type<reduction>, #linalg.iterator_type<reduction>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg72: f32, %arg73: f32):
      %82 = "arith.addf"(%arg73, %arg72) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%82) : (f32) -> ()
    }) : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
    %23 = "linalg.generic"(%22, %20) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg70: f32, %arg71: f32):
      %81 = "arith.divf"(%arg70, %3) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%81) : (f32) -> ()
    }) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %24 = "linalg.generic"(%20) <{indexing_maps = [#map2], iterator_types = [], operandSegmentSizes = array<i32: 0, 1>}> ({
    ^bb0(%arg69: f32):
      "linalg.yield"(%0) : (f32) -> ()
    }) : (tensor<f32>) -> tensor<f32>
    %25 = "linalg.generic"(%24, %15) <{indexing_maps = [#map8, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg67: f32, %arg68: f32):
      "linalg.yield"(%arg67) : (f32) -> ()
    }) : (tensor<f32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %26 = "linalg.generic"(%25, %19, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg64: f32, %arg65: f32, %arg66: f32):
      %80 = "arith.mulf"(%arg64, %arg65) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%80) : (f32) -> ()
    }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %27 = "tensor.empty"() : () -> tensor<4x16x16xf32>
    %28 = "linalg.generic"(%11, %27) <{indexing_maps = [#map, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg62: f32, %arg63: f32):
      "linalg.yield"(%arg62) : (f32) -> ()
    }) : (tensor<f32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %29:5 = "stablehlo.while"(%14#3, %arg0, %10, %26, %28) ({
    ^bb0(%arg55: tensor<4x8x16xf32>, %arg56: tensor<4x16x16xf32>, %arg57: tensor<i32>, %arg58: tensor<8x16xf32>, %arg59: tensor<4x16x16xf32>):
      %77 = "tensor.empty"() : () -> tensor<i1>
      %78 = "linalg.generic"(%arg57, %77) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg60: i32, %arg61: i1):
        %79 = "arith.cmpi"(%arg60, %9) <{predicate = 2 : i64}> : (i32, i32) -> i1
        "linalg.yield"(%79) : (i1) -> ()
      }) : (tensor<i32>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%78) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg11: tensor<4x8x16xf32>, %arg12: tensor<4x16x16xf32>, %arg13: tensor<i32>, %arg14: tensor<8x16xf32>, %arg15: tensor<4x16x16xf32>):
      %35 = "tensor.empty"() : () -> tensor<i32>
      %36 = "linalg.generic"(%arg13, %35) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg53: i32, %arg54: i32):
        %76 = "arith.subi"(%9, %arg53) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
        "linalg.yield"(%76) : (i32) -> ()
      }) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %37 = "linalg.generic"(%36, %35) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg51: i32, %arg52: i32):
        %75 = "arith.subi"(%arg51, %5) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
        "linalg.yield"(%75) : (i32) -> ()
      }) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %38 = "tensor.extract"(%37) : (tensor<i32>) -> i32
      %39 = "arith.index_cast"(%38) : (i32) -> index
      %40 = "arith.maxsi"(%39, %8) : (index, index) -> index
      %41 = "arith.minsi"(%40, %7) : (index, index) -> index
      %42 = "tensor.extract_slice"(%arg11, %41) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 8, 16>, static_strides = array<i64: 1, 1, 1>}> : (tensor<4x8x16xf32>, index) -> tensor<1x8x16xf32>
      %43 = "tensor.collapse_shape"(%42) <{reassociation = [[0, 1], [2]]}> : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
      %44 = "tensor.extract_slice"(%arg12, %41) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 16, 16>, static_strides = array<i64: 1, 1, 1>}> : (tensor<4x16x16xf32>, index) -> tensor<1x16x16xf32>
      %45 = "tensor.collapse_shape"(%44) <{reassociation = [[0, 1], [2]]}> : (tensor<1x16x16xf32>) -> tensor<16x16xf32>
      %46 = "linalg.fill"(%6, %15) <{operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg49: f32, %arg50: f32):
        "linalg.yield"(%arg49) : (f32) -> ()
      }) : (f32, tensor<8x16xf32>) -> tensor<8x16xf32>
      %47 = "linalg.matmul"(%43, %45, %46) <{indexing_maps = [#map3, #map4, #map5], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg46: f32, %arg47: f32, %arg48: f32):
        %73 = "arith.mulf"(%arg46, %arg47) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        %74 = "arith.addf"(%arg48, %73) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%74) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %48 = "linalg.generic"(%47, %15) <{indexing_maps = [#map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg44: f32, %arg45: f32):
        %72 = "math.tanh"(%arg44) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32
        "linalg.yield"(%72) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %49 = "linalg.generic"(%2, %15) <{indexing_maps = [#map8, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg42: f32, %arg43: f32):
        "linalg.yield"(%arg42) : (f32) -> ()
      }) : (tensor<f32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %50 = "linalg.generic"(%49, %48, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg39: f32, %arg40: f32, %arg41: f32):
        %71 = "arith.addf"(%arg39, %arg40) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%71) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %51 = "linalg.generic"(%49, %48, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg36: f32, %arg37: f32, %arg38: f32):
        %70 = "arith.subf"(%arg36, %arg37) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%70) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %52 = "linalg.generic"(%50, %51, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg33: f32, %arg34: f32, %arg35: f32):
        %69 = "arith.mulf"(%arg33, %arg34) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%69) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %53 = "linalg.generic"(%arg14, %52, %15) <{indexing_maps = [#map6, #map6, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg30: f32, %arg31: f32, %arg32: f32):
        %68 = "arith.mulf"(%arg30, %arg31) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%68) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %54 = "tensor.empty"() : () -> tensor<16x16xf32>
      %55 = "linalg.fill"(%6, %54) <{operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg28: f32, %arg29: f32):
        "linalg.yield"(%arg28) : (f32) -> ()
      }) : (f32, tensor<16x16xf32>) -> tensor<16x16xf32>
      %56 = "linalg.generic"(%53, %43, %55) <{indexing_maps = [#map9, #map4, #map5], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg25: f32, %arg26: f32, %arg27: f32):
        %66 = "arith.mulf"(%arg25, %arg26) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        %67 = "arith.addf"(%arg27, %66) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%67) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %57 = "linalg.generic"(%56, %54) <{indexing_maps = [#map10, #map6], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        "linalg.yield"(%arg23) : (f32) -> ()
      }) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %58 = "linalg.generic"(%53, %45, %46) <{indexing_maps = [#map3, #map7, #map5], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>], operandSegmentSizes = array<i32: 2, 1>}> ({
      ^bb0(%arg20: f32, %arg21: f32, %arg22: f32):
        %64 = "arith.mulf"(%arg20, %arg21) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        %65 = "arith.addf"(%arg22, %64) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "linalg.yield"(%65) : (f32) -> ()
      }) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      %59 = "tensor.empty"() : () -> tensor<1x16x16xf32>
      %60 = "linalg.generic"(%57, %59) <{indexing_maps = [#map7, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg18: f32, %arg19: f32):
        "linalg.yield"(%arg18) : (f32) -> ()
      }) : (tensor<16x16xf32>, tensor<1x16x16xf32>) -> tensor<1x16x16xf32>
      %61 = "tensor.insert_slice"(%60, %arg15, %41) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, static_offsets = array<i64: -9223372036854775808, 0, 0>, static_sizes = array<i64: 1, 16, 16>, static_strides = array<i64: 1, 1, 1>}> : (tensor<1x16x16xf32>, tensor<4x16x16xf32>, index) -> tensor<4x16x16xf32>
      %62 = "linalg.generic"(%arg13, %35) <{indexing_maps = [#map2, #map2], iterator_types = [], operandSegmentSizes = array<i32: 1, 1>}> ({
      ^bb0(%arg16: i32, %arg17: i32):
        %63 = "arith.addi"(%arg16, %5) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
        "linalg.yield"(%63) : (i32) -> ()
      }) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%arg11, %arg12, %62, %58, %61) : (tensor<4x8x16xf32>, tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x16x16xf32>) -> ()
    }) : (tensor<4x8x16xf32>, tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x16x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<4x16x16xf32>)
    %30 = "linalg.generic"(%1, %27) <{indexing_maps = [#map, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg9: f32, %arg10: f32):
      "linalg.yield"(%arg9) : (f32) -> ()
    }) : (tensor<f32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %31 = "linalg.generic"(%30, %29#4, %27) <{indexing_maps = [#map1, #map1, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg6: f32, %arg7: f32, %arg8: f32):
      %34 = "arith.mulf"(%arg6, %arg7) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%34) : (f32) -> ()
    }) : (tensor<4x16x16xf32>, tensor<4x16x16xf32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %32 = "linalg.generic"(%arg0, %31, %27) <{indexing_maps = [#map1, #map1, #map1], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>], operandSegmentSizes = array<i32: 2, 1>}> ({
    ^bb0(%arg3: f32, %arg4: f32, %arg5: f32):
      %33 = "arith.subf"(%arg3, %arg4) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
      "linalg.yield"(%33) : (f32) -> ()
    }) : (tensor<4x16x16xf32>, tensor<4x16x16xf32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    "func.return"(%23, %32) : (tensor<f32>, tensor<4x16x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
