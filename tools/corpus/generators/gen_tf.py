"""TensorFlow programs compiled by XLA (``tf.function(jit_compile=True)``), for dumps.

Each function is traced once with fixed shapes and run (XLA compiles on the first call); the
module names are TensorFlow's: ``a_inference_<fn>_<id>__XlaMustCompile_true_config_proto_…``.
Programs: a dense layer + softmax, a dense layer's gradient and SGD step (GradientTape), a 2-D
convolution + bias + relu + max pool, a while loop (tf.while_loop) and a tf.scan, reductions
(sum / max / mean / argmax / logsumexp / cumsum). Every step is in try/except (``FAILED <step>``).

Usage:
  XLA_FLAGS=--xla_dump_to=DIR TF_CPP_MIN_LOG_LEVEL=2 python gen_tf.py [open]
"""
import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

rs = np.random.RandomState(0)


def fail(step, e):
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    print(f"FAILED {step}: {type(e).__name__}: {msg}", flush=True)


def f32(*shape):
    return tf.constant(rs.randn(*shape).astype(np.float32))


@tf.function(jit_compile=True)
def dense_softmax(x, w, b):
    return tf.nn.softmax(tf.matmul(x, w) + b, axis=-1)


@tf.function(jit_compile=True)
def dense_sgd_step(x, y, w, b):
    with tf.GradientTape() as tape:
        tape.watch([w, b])
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    gw, gb = tape.gradient(loss, [w, b])
    return loss, w - 0.1 * gw, b - 0.1 * gb


@tf.function(jit_compile=True)
def conv_relu_pool(img, k, bias):
    y = tf.nn.conv2d(img, k, strides=1, padding="SAME") + bias
    y = tf.nn.relu(y)
    return tf.nn.max_pool2d(y, ksize=2, strides=2, padding="VALID")


@tf.function(jit_compile=True)
def while_newton(x):
    def cond(i, y, err):
        return tf.logical_and(i < 50, err > 1e-6)

    def body(i, y, err):
        y2 = 0.5 * (y + x / y)
        return i + 1, y2, tf.reduce_max(tf.abs(y2 - y))
    return tf.while_loop(cond, body, (tf.constant(0), tf.ones_like(x), tf.constant(1.0)))


@tf.function(jit_compile=True)
def scan_rnn(xs, w, h0):
    return tf.scan(lambda h, x: tf.tanh(tf.matmul(x, w) + h), xs, initializer=h0)


@tf.function(jit_compile=True)
def reductions(x):
    return (tf.reduce_sum(x), tf.reduce_max(x, axis=0), tf.reduce_mean(x, axis=1),
            tf.argmax(x, axis=1), tf.reduce_logsumexp(x, axis=-1), tf.cumsum(x, axis=0))


def run(name, f, *args):
    try:
        out = f(*args)
        print("ok", name, [getattr(o, "shape", None) for o in tf.nest.flatten(out)], flush=True)
    except Exception as e:  # noqa: BLE001
        fail(name, e)


def main():
    print("tensorflow", tf.__version__, flush=True)
    x = f32(16, 32)
    w = f32(32, 10) * 0.1
    b = tf.zeros([10])
    run("dense_softmax", dense_softmax, x, w, b)
    y = tf.one_hot(rs.randint(0, 10, size=16), 10)
    run("dense_sgd_step", dense_sgd_step, x, y, w, b)
    run("conv_relu_pool", conv_relu_pool, f32(2, 16, 16, 3), f32(3, 3, 3, 8) * 0.1, tf.zeros([8]))
    run("while_newton", while_newton, tf.abs(f32(24)) + 0.5)
    run("scan_rnn", scan_rnn, f32(9, 3, 12), f32(12, 12) * 0.1, tf.zeros([3, 12]))
    run("reductions", reductions, f32(64, 48))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        fail("main", e)
        traceback.print_exc()
    sys.exit(0)
