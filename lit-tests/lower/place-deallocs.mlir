// RUN: remat-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(remat-place-deallocs))' | FileCheck %s

// Each dealloc moves up to just after the last use of its buffer.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    linalg.copy ins(%[[A]] {{.*}} outs(%[[B]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    linalg.copy ins(%[[B]] {{.*}} outs(%[[C]]
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    return %[[C]]
func.func @chain(%x: f32) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %c = memref.alloc() : memref<4xf32>
  linalg.copy ins(%b : memref<4xf32>) outs(%c : memref<4xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return %c : memref<4xf32>
}

// -----

// A view keeps its source alive: the dealloc follows the view's last use.
// CHECK-LABEL: func.func @view
// CHECK:         %[[V:.*]] = memref.expand_shape %[[A:[a-z_0-9]+]]
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.copy ins(%[[V]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    return
func.func @view(%x: f32, %out: memref<2x2xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %v = memref.expand_shape %a [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
  linalg.copy ins(%v : memref<2x2xf32>) outs(%out : memref<2x2xf32>)
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// A use inside a loop counts as a use by the loop; a loop result that may alias the buffer
// keeps it alive too.
// CHECK-LABEL: func.func @region_use
// CHECK:         scf.for
// CHECK:         }
// CHECK-NEXT:    memref.dealloc
// CHECK:         %[[R:.*]] = scf.if
// CHECK:         memref.load %[[R]]
// CHECK-NEXT:    memref.dealloc
// CHECK-NEXT:    return
func.func @region_use(%x: f32, %n: index, %p: i1, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %x, %a[%c0] : memref<4xf32>
  }
  %b = memref.alloc() : memref<4xf32>
  %r = scf.if %p -> memref<4xf32> {
    scf.yield %b : memref<4xf32>
  } else {
    scf.yield %out : memref<4xf32>
  }
  %v = memref.load %r[%c0] : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return %v : f32
}

// -----

// A buffer never used is freed right after it is allocated; a dealloc already in place stays.
// CHECK-LABEL: func.func @unused
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    %[[B:.*]] = memref.alloc()
// CHECK-NEXT:    linalg.fill {{.*}} outs(%[[B]]
// CHECK-NEXT:    memref.dealloc %[[B]]
func.func @unused(%x: f32) {
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%x : f32) outs(%b : memref<8xf32>)
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// Inside a loop body the same holds, block by block.
// CHECK-LABEL: func.func @in_loop
// CHECK:         scf.for
// CHECK-NEXT:      %[[T:.*]] = memref.alloc()
// CHECK-NEXT:      linalg.fill {{.*}} outs(%[[T]]
// CHECK-NEXT:      memref.dealloc %[[T]]
// CHECK-NEXT:      func.call @side_effect
func.func private @side_effect()
func.func @in_loop(%x: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<8xf32>
    linalg.fill ins(%x : f32) outs(%t : memref<8xf32>)
    func.call @side_effect() : () -> ()
    memref.dealloc %t : memref<8xf32>
  }
  return
}
