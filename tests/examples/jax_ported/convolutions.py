# ruff: noqa: E402, I001  (the notebook's cells as they are: imports between cells, in its order)
# Copyright 2024 The JAX Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# The code cells of JAX's docs/notebooks/convolutions.md ("Generalized convolutions in JAX", jax-ml/jax cec06d116c),
# one after the other, ported to kiln by changing imports only. Each cell is wrapped in a function that returns what
# the cell prints or plots (its prints stay); what a cell takes from an earlier one (the edge kernel `kernel`, the
# synthetic image `img`, the dimension numbers `dn`) is an argument. Left out: matplotlib (the imports, the
# `plt`/`ax`/`fig` lines and the 3-D section's `make_alpha` colour map, which only plot). The N-dimensional
# smoothing cell loads `scipy.datasets.face()`, which downloads the picture: here the RGB picture is the argument
# `face`, and the cell's first line computes `jnp.array(face.mean(-1))` from it as the notebook does.
# tests/examples/test_convolutions.py checks it against NumPy/SciPy, test_convolutions_against_jax.py runs it under
# both libraries.

# ## Basic one-dimensional convolution

from kiln import random
import kiln.numpy as jnp
import numpy as np

def smoothing_1d():
  key = random.key(1701)

  x = jnp.linspace(0, 10, 500)
  y = jnp.sin(x) + 0.2 * random.normal(key, shape=(500,))

  window = jnp.ones(10) / 10
  y_smooth = jnp.convolve(y, window, mode='same')

  return x, y, y_smooth

# ## Basic N-dimensional convolution

import kiln.scipy as jsp

def smoothing_nd(face):
  # Load a sample image; compute mean() to convert from RGB to grayscale.
  image = jnp.array(face.mean(-1))

  # Create a noisy version by adding random Gaussian noise
  key = random.key(1701)
  noisy_image = image + 50 * random.normal(key, image.shape)

  # Smooth the noisy image with a 2D Gaussian smoothing kernel.
  x = jnp.linspace(-3, 3, 7)
  window = jsp.stats.norm.pdf(x) * jsp.stats.norm.pdf(x[:, None])
  smooth_image = jsp.signal.convolve(noisy_image, window, mode='same')
  return image, noisy_image, window, smooth_image

# ## General convolutions

def edge_kernel():
  # 2D kernel - HWIO layout
  kernel = jnp.zeros((3, 3, 3, 3), dtype=jnp.float32)
  kernel += jnp.array([[1, 1, 0],
                       [1, 0,-1],
                       [0,-1,-1]])[:, :, jnp.newaxis, jnp.newaxis]

  print("Edge Conv kernel:")
  return kernel

def synthetic_image():
  # NHWC layout
  img = jnp.zeros((1, 200, 198, 3), dtype=jnp.float32)
  for k in range(3):
    x = 30 + 60*k
    y = 20 + 60*k
    img = img.at[0, x:x+10, y:y+10, k].set(1.0)

  print("Original Image:")
  return img

# ### lax.conv and lax.conv_with_general_padding

from kiln import lax

def lax_conv(img, kernel):
  out = lax.conv(jnp.transpose(img,[0,3,1,2]),    # lhs = NCHW image tensor
                 jnp.transpose(kernel,[3,2,0,1]), # rhs = OIHW conv kernel tensor
                 (1, 1),  # window strides
                 'SAME') # padding mode
  print("out shape: ", out.shape)
  print("First output channel:")
  return out, np.array(out)[0,0,:,:]

def lax_conv_with_general_padding(img, kernel):
  out = lax.conv_with_general_padding(
    jnp.transpose(img,[0,3,1,2]),    # lhs = NCHW image tensor
    jnp.transpose(kernel,[3,2,0,1]), # rhs = OIHW conv kernel tensor
    (1, 1),  # window strides
    ((2,2),(2,2)), # general padding 2x2
    (1,1),  # lhs/image dilation
    (1,1))  # rhs/kernel dilation
  print("out shape: ", out.shape)
  print("First output channel:")
  return out, np.array(out)[0,0,:,:]

# ### Dimension Numbers define dimensional layout for conv_general_dilated

def dimension_numbers(img, kernel):
  dn = lax.conv_dimension_numbers(img.shape,     # only ndim matters, not shape
                                  kernel.shape,  # only ndim matters, not shape
                                  ('NHWC', 'HWIO', 'NHWC'))  # the important bit
  print(dn)
  return dn

# #### SAME padding, no stride, no dilation

def same_padding(img, kernel, dn):
  out = lax.conv_general_dilated(img,    # lhs = image tensor
                                 kernel, # rhs = conv kernel tensor
                                 (1,1),  # window strides
                                 'SAME', # padding mode
                                 (1,1),  # lhs/image dilation
                                 (1,1),  # rhs/kernel dilation
                                 dn)     # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape)
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

# #### VALID padding, no stride, no dilation

def valid_padding(img, kernel, dn):
  out = lax.conv_general_dilated(img,     # lhs = image tensor
                                 kernel,  # rhs = conv kernel tensor
                                 (1,1),   # window strides
                                 'VALID', # padding mode
                                 (1,1),   # lhs/image dilation
                                 (1,1),   # rhs/kernel dilation
                                 dn)      # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape, "DIFFERENT from above!")
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

# #### SAME padding, 2,2 stride, no dilation

def same_padding_stride_2(img, kernel, dn):
  out = lax.conv_general_dilated(img,    # lhs = image tensor
                                 kernel, # rhs = conv kernel tensor
                                 (2,2),  # window strides
                                 'SAME', # padding mode
                                 (1,1),  # lhs/image dilation
                                 (1,1),  # rhs/kernel dilation
                                 dn)     # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape, " <-- half the size of above")
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

# #### VALID padding, no stride, rhs kernel dilation ~ Atrous convolution (excessive to illustrate)

def rhs_dilation(img, kernel, dn):
  out = lax.conv_general_dilated(img,     # lhs = image tensor
                                 kernel,  # rhs = conv kernel tensor
                                 (1,1),   # window strides
                                 'VALID', # padding mode
                                 (1,1),   # lhs/image dilation
                                 (12,12), # rhs/kernel dilation
                                 dn)      # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape)
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

# #### VALID padding, no stride, lhs=input dilation  ~ Transposed Convolution

def lhs_dilation(img, kernel, dn):
  out = lax.conv_general_dilated(img,               # lhs = image tensor
                                 kernel,            # rhs = conv kernel tensor
                                 (1,1),             # window strides
                                 ((0, 0), (0, 0)),  # padding mode
                                 (2,2),             # lhs/image dilation
                                 (1,1),             # rhs/kernel dilation
                                 dn)                # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape, "<-- larger than original!")
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

def transposed_conv(img, kernel, dn):
  # The following is equivalent to tensorflow:
  # N,H,W,C = img.shape
  # out = tf.nn.conv2d_transpose(img, kernel, (N,2*H,2*W,C), (1,2,2,1))

  # transposed conv = 180deg kernel rotation plus LHS dilation
  # rotate kernel 180deg:
  kernel_rot = jnp.rot90(jnp.rot90(kernel, axes=(0,1)), axes=(0,1))
  # need a custom output padding:
  padding = ((2, 1), (2, 1))
  out = lax.conv_general_dilated(img,     # lhs = image tensor
                                 kernel_rot,  # rhs = conv kernel tensor
                                 (1,1),   # window strides
                                 padding, # padding mode
                                 (2,2),   # lhs/image dilation
                                 (1,1),   # rhs/kernel dilation
                                 dn)      # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape, "<-- transposed_conv")
  print("First output channel:")
  return out, np.array(out)[0,:,:,0]

# ### 1D Convolutions

def conv_1d():
  # 1D kernel - WIO layout
  kernel = jnp.array([[[1, 0, -1], [-1,  0,  1]],
                      [[1, 1,  1], [-1, -1, -1]]],
                      dtype=jnp.float32).transpose([2,1,0])
  # 1D data - NWC layout
  data = np.zeros((1, 200, 2), dtype=jnp.float32)
  for i in range(2):
    for k in range(2):
        x = 35*i + 30 + 60*k
        data[0, x:x+30, k] = 1.0

  print("in shapes:", data.shape, kernel.shape)

  dn = lax.conv_dimension_numbers(data.shape, kernel.shape,
                                  ('NWC', 'WIO', 'NWC'))
  print(dn)

  out = lax.conv_general_dilated(data,   # lhs = image tensor
                                 kernel, # rhs = conv kernel tensor
                                 (1,),   # window strides
                                 'SAME', # padding mode
                                 (1,),   # lhs/image dilation
                                 (1,),   # rhs/kernel dilation
                                 dn)     # dimension_numbers = lhs, rhs, out dimension permutation
  print("out shape: ", out.shape)
  return data, kernel, dn, out

# ### 3D Convolutions

def conv_3d():
  # Random 3D kernel - HWDIO layout
  kernel = jnp.array([
    [[0, 0,  0], [0,  1,  0], [0,  0,   0]],
    [[0, -1, 0], [-1, 0, -1], [0,  -1,  0]],
    [[0, 0,  0], [0,  1,  0], [0,  0,   0]]],
    dtype=jnp.float32)[:, :, :, jnp.newaxis, jnp.newaxis]

  # 3D data - NHWDC layout
  data = jnp.zeros((1, 30, 30, 30, 1), dtype=jnp.float32)
  x, y, z = np.mgrid[0:1:30j, 0:1:30j, 0:1:30j]
  data += (jnp.sin(2*x*jnp.pi)*jnp.cos(2*y*jnp.pi)*jnp.cos(2*z*jnp.pi))[None,:,:,:,None]

  print("in shapes:", data.shape, kernel.shape)
  dn = lax.conv_dimension_numbers(data.shape, kernel.shape,
                                  ('NHWDC', 'HWDIO', 'NHWDC'))
  print(dn)

  out = lax.conv_general_dilated(data,    # lhs = image tensor
                                 kernel,  # rhs = conv kernel tensor
                                 (1,1,1), # window strides
                                 'SAME',  # padding mode
                                 (1,1,1), # lhs/image dilation
                                 (1,1,1), # rhs/kernel dilation
                                 dn)      # dimension_numbers
  print("out shape: ", out.shape)
  return (x, y, z), data, kernel, dn, out
