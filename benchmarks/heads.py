"""Detection-head post-processing workloads, written as plain NumPy.

Each function below is a NumPy port of the code that detection frameworks (mmdetection,
py-faster-rcnn, YOLOv3/v5, FCOS, SSD, CenterNet) run around the network: anchor and prior
generation, valid flags, box encoding/decoding, clipping, IoU matrices, score post-processing,
and the data-dependent steps in front of NMS (score thresholds, top-k, sorting by score).
They are written the way that code is written, with strided views (``boxes[:, 0::4]``,
``x[..., None]``, ``a[..., ::-1]``), in-place writes through views (``bboxes[:, 0::4] = ...``,
``y[..., 0:2] *= s``, ``np.clip(v, lo, hi, out=v)``), the odd Python loop over a static extent,
and, in the heads of the "Data-dependent post-processing" section, boolean masks (``x[keep]``,
``scores[scores < thr] = 0``, ``x[m] -= y[m]``), integer-array gathers (``boxes[order]``) and
``np.argsort``/``.argsort()`` (``kind="stable"`` wherever ties can occur), whose results have a
length known only at run time and are then sliced (``[:k]``, ``[::-1]``), reduced and
concatenated.  They stay inside the NumPy subset that strider supports: no Python control flow
on array values or run-time lengths (YOLOv5's ``if not x.shape[0]: continue`` is left out);
scalars that decide a shape or a branch (``k``, ``max_nms``) are static arguments.  The heads of
the "NMS loops" section (``NMS_HEADS``: py_cpu_nms, hard NMS, class-aware greedy NMS, YOLOX's
multi-class NMS, Soft-NMS) are the exception: written as detection projects write them, they
loop in Python over traced values (``while order.size > 0``, ``if suppressed[i]: continue``, a
row swap at ``np.argmax``) and return their keep lists as arrays; strider does not compile them
yet (issue 17), and run.py shows that as its FAIL with the reason.

The registry ``HEADS`` maps a name to a :class:`Head`: the function, a ``make_inputs(size, rng,
dtype)`` companion that returns ``(args, kwargs)``, the static argument names, the comparison
tolerances per dtype and the dtypes it runs in: float32 and float64, or one dtype for a head
written for it (``valid_flags``: bool; ``image_preprocess_u8``: a uint8 image, float32 results;
``yolo_decode_f16_``: float16 throughout), which run.py then runs once, in that dtype.  Sizes are
named configurations in ``SIZES``:

* ``tiny``  -- a few anchors, for unit tests;
* ``small`` -- a few hundred anchors, still fast enough for tests;
* ``image`` -- one image: a 100x68 stride-8 feature map with 3 anchors per location (20,400
  anchors), 50 ground-truth boxes, 80 classes, 1,000 RoIs;
* ``batch`` -- the same for 8 images.

Per-image heads that take rows of boxes (delta2bbox, IoU, ...) get ``batch * anchors`` rows, the
way a batch is flattened before the box coder; heads named ``*_batched`` take an explicit leading
batch dimension.  ``yolov5_prologue`` takes YOLOv5's output for a letterboxed square image per
image (25,200 rows of 5 + 80 columns at 640 px, the side the image and batch sizes use; 32 px at
tiny), ``image_preprocess_u8`` the letterboxed image itself (640 x 640 x 3 uint8; 32 px at tiny),
one image at the image size and ``(B, H, W, 3)`` at the others, ``argsort_scores*`` 5 scores per
anchor row (102,000 per image).  A size may also be a dict of overrides on top of ``small``.
"""
import math
from dataclasses import dataclass, field

import numpy as np

# --------------------------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------------------------

SIZES = {
    # B images, H x W feature map at `stride`, A anchors per location, G gt boxes, C classes,
    # R RoIs per image (two-stage heads), K class-specific regression groups.
    "tiny": dict(B=2, H=3, W=4, A=3, G=3, C=3, R=6, K=2, stride=8),
    "small": dict(B=2, H=12, W=16, A=3, G=8, C=10, R=64, K=2, stride=8),
    "image": dict(B=1, H=100, W=68, A=3, G=50, C=80, R=1000, K=2, stride=8),
    "batch": dict(B=8, H=100, W=68, A=3, G=50, C=80, R=1000, K=2, stride=8),
}


def size_config(size):
    """Resolve a size name (or a dict of overrides on top of ``small``) to a config dict."""
    if isinstance(size, dict):
        cfg = dict(SIZES["small"])
        cfg.update(size)
        return cfg
    return dict(SIZES[size])


def _img_shape(cfg):
    return (cfg["H"] * cfg["stride"], cfg["W"] * cfg["stride"])


def _num_anchors(cfg):
    return cfg["H"] * cfg["W"] * cfg["A"]


def _rows(cfg):
    """Rows for per-image box heads: the batch flattened into one array of boxes."""
    return cfg["B"] * _num_anchors(cfg)


def _rand_boxes(rng, shape, img_shape, dtype, min_size=2.0, max_frac=0.4, outside=0.0):
    """Random valid xyxy boxes (x2 > x1, y2 > y1) of shape ``shape + (4,)``.

    ``outside`` lets a fraction of the image size spill past every border (for clipping).
    """
    h, w = img_shape
    shape = tuple(shape)
    x1 = rng.uniform(-outside * w, w * (1 + outside) - min_size, size=shape)
    y1 = rng.uniform(-outside * h, h * (1 + outside) - min_size, size=shape)
    bw = rng.uniform(min_size, max(min_size + 1.0, max_frac * w), size=shape)
    bh = rng.uniform(min_size, max(min_size + 1.0, max_frac * h), size=shape)
    boxes = np.stack([x1, y1, x1 + bw, y1 + bh], axis=-1)
    if outside == 0.0:
        boxes[..., 2] = np.minimum(boxes[..., 2], w)
        boxes[..., 3] = np.minimum(boxes[..., 3], h)
    return boxes.astype(dtype)


def _means_stds(dtype):
    return (np.array([0.0, 0.0, 0.0, 0.0], dtype=dtype),
            np.array([0.1, 0.1, 0.2, 0.2], dtype=dtype))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --------------------------------------------------------------------------------------------
# Anchor / prior generation
# --------------------------------------------------------------------------------------------

def base_anchors(scales, ratios, base_size, center_offset=0.0):
    """mmdet AnchorGenerator.gen_single_level_base_anchors: (len(ratios) * len(scales), 4)."""
    w = base_size
    h = base_size
    x_center = center_offset * w
    y_center = center_offset * h
    h_ratios = np.sqrt(ratios)
    w_ratios = 1 / h_ratios
    ws = (w * w_ratios[:, None] * scales[None, :]).reshape(-1)
    hs = (h * h_ratios[:, None] * scales[None, :]).reshape(-1)
    anchors = [x_center - 0.5 * ws, y_center - 0.5 * hs,
               x_center + 0.5 * ws, y_center + 0.5 * hs]
    return np.stack(anchors, axis=-1)


def _whctrs(anchor):
    w = anchor[2] - anchor[0] + 1
    h = anchor[3] - anchor[1] + 1
    x_ctr = anchor[0] + 0.5 * (w - 1)
    y_ctr = anchor[1] + 0.5 * (h - 1)
    return w, h, x_ctr, y_ctr


def _mkanchors(ws, hs, x_ctr, y_ctr):
    ws = ws[:, np.newaxis]
    hs = hs[:, np.newaxis]
    return np.hstack((x_ctr - 0.5 * (ws - 1), y_ctr - 0.5 * (hs - 1),
                      x_ctr + 0.5 * (ws - 1), y_ctr + 0.5 * (hs - 1)))


def _ratio_enum(anchor, ratios):
    w, h, x_ctr, y_ctr = _whctrs(anchor)
    size = w * h
    size_ratios = size / ratios
    ws = np.round(np.sqrt(size_ratios))
    hs = np.round(ws * ratios)
    return _mkanchors(ws, hs, x_ctr, y_ctr)


def _scale_enum(anchor, scales):
    w, h, x_ctr, y_ctr = _whctrs(anchor)
    ws = w * scales
    hs = h * scales
    return _mkanchors(ws, hs, x_ctr, y_ctr)


def generate_anchors(base_anchor, ratios, scales):
    """py-faster-rcnn generate_anchors: 0-d element reads, round/sqrt, hstack/vstack."""
    ratio_anchors = _ratio_enum(base_anchor, ratios)
    return np.vstack([_scale_enum(ratio_anchors[i, :], scales)
                      for i in range(ratio_anchors.shape[0])])


def grid_anchors(base_anchors, featmap_size, stride):
    """mmdet single_level_grid_priors: meshgrid of shifts + base anchors, (H*W*A, 4)."""
    feat_h, feat_w = featmap_size
    stride_w, stride_h = stride, stride
    shift_x = np.arange(0, feat_w).astype(base_anchors.dtype) * stride_w
    shift_y = np.arange(0, feat_h).astype(base_anchors.dtype) * stride_h
    shift_xx, shift_yy = np.meshgrid(shift_x, shift_y)
    shift_xx = shift_xx.ravel()
    shift_yy = shift_yy.ravel()
    shifts = np.stack([shift_xx, shift_yy, shift_xx, shift_yy], axis=-1)
    all_anchors = base_anchors[None, :, :] + shifts[:, None, :]
    return all_anchors.reshape(-1, 4)


def grid_points(featmap_size, stride, offset=0.5, with_stride=True, dtype=np.float32):
    """mmdet MlvlPointGenerator.single_level_grid_priors (FCOS/ATSS points): no array inputs."""
    feat_h, feat_w = featmap_size
    stride_w, stride_h = stride, stride
    shift_x = ((np.arange(0, feat_w) + offset) * stride_w).astype(dtype)
    shift_y = ((np.arange(0, feat_h) + offset) * stride_h).astype(dtype)
    shift_xx, shift_yy = np.meshgrid(shift_x, shift_y)
    shift_xx = shift_xx.reshape(-1)
    shift_yy = shift_yy.reshape(-1)
    if not with_stride:
        return np.stack([shift_xx, shift_yy], axis=-1)
    stride_w = np.full((shift_xx.shape[0],), stride_w, dtype=dtype)
    stride_h = np.full((shift_yy.shape[0],), stride_h, dtype=dtype)
    return np.stack([shift_xx, shift_yy, stride_w, stride_h], axis=-1)


def ssd_priors(wh, feat_size, image_size, clip=True):
    """SSD PriorBox for one feature map, vectorized: (H*W*K, 4) cx, cy, w, h in [0, 1]."""
    fh, fw = feat_size
    cx = np.linspace(0.5, fw - 0.5, fw) / fw
    cy = np.linspace(0.5, fh - 0.5, fh) / fh
    cxx, cyy = np.meshgrid(cx, cy)
    k = wh.shape[0]
    centers = np.stack([cxx.ravel(), cyy.ravel()], axis=-1)
    centers = np.repeat(centers, k, axis=0).astype(wh.dtype)
    sizes = np.tile(wh / image_size, (fh * fw, 1))
    priors = np.hstack([centers, sizes])
    if clip:
        np.clip(priors, 0, 1, out=priors)
    return priors


def valid_flags(featmap_size, pad_shape, stride, num_base_anchors):
    """mmdet AnchorGenerator.valid_flags for one level: everything static, bool (H*W*A,)."""
    feat_h, feat_w = featmap_size
    h, w = pad_shape
    valid_h = min(int(np.ceil(h / stride)), feat_h)
    valid_w = min(int(np.ceil(w / stride)), feat_w)
    valid_x = np.zeros(feat_w, dtype=bool)
    valid_y = np.zeros(feat_h, dtype=bool)
    valid_x[:valid_w] = True
    valid_y[:valid_h] = True
    valid_xx, valid_yy = np.meshgrid(valid_x, valid_y)
    valid = valid_xx.ravel() & valid_yy.ravel()
    valid = np.broadcast_to(valid[:, None], (valid.shape[0], num_base_anchors)).reshape(-1)
    return valid


def anchor_inside_flags(flat_anchors, valid_flags, img_shape, allowed_border=0):
    """mmdet anchor_inside_flags: anchors fully inside the image (plus border) and valid."""
    img_h, img_w = img_shape[:2]
    if allowed_border >= 0:
        inside_flags = valid_flags & \
            (flat_anchors[:, 0] >= -allowed_border) & \
            (flat_anchors[:, 1] >= -allowed_border) & \
            (flat_anchors[:, 2] < img_w + allowed_border) & \
            (flat_anchors[:, 3] < img_h + allowed_border)
    else:
        inside_flags = valid_flags
    return inside_flags


# --------------------------------------------------------------------------------------------
# Box coders
# --------------------------------------------------------------------------------------------

def delta2bbox(rois, deltas, means, stds, max_shape=None, wh_ratio_clip=16 / 1000):
    """mmdet v1 DeltaXYWHBBoxCoder decode, class-specific (N, 4*K) deltas, strided writes."""
    num_classes = deltas.shape[1] // 4
    means = np.tile(means, num_classes)[None, :]
    stds = np.tile(stds, num_classes)[None, :]
    denorm_deltas = deltas * stds + means
    dx = denorm_deltas[:, 0::4]
    dy = denorm_deltas[:, 1::4]
    dw = denorm_deltas[:, 2::4]
    dh = denorm_deltas[:, 3::4]
    max_ratio = abs(math.log(wh_ratio_clip))
    dw = np.clip(dw, -max_ratio, max_ratio)
    dh = np.clip(dh, -max_ratio, max_ratio)
    px = ((rois[:, 0] + rois[:, 2]) * 0.5)[:, None]
    py = ((rois[:, 1] + rois[:, 3]) * 0.5)[:, None]
    pw = (rois[:, 2] - rois[:, 0])[:, None]
    ph = (rois[:, 3] - rois[:, 1])[:, None]
    gw = pw * np.exp(dw)
    gh = ph * np.exp(dh)
    gx = px + pw * dx
    gy = py + ph * dy
    bboxes = np.empty_like(deltas)
    bboxes[:, 0::4] = gx - gw * 0.5
    bboxes[:, 1::4] = gy - gh * 0.5
    bboxes[:, 2::4] = gx + gw * 0.5
    bboxes[:, 3::4] = gy + gh * 0.5
    if max_shape is not None:
        np.clip(bboxes[:, 0::2], 0, max_shape[1], out=bboxes[:, 0::2])
        np.clip(bboxes[:, 1::2], 0, max_shape[0], out=bboxes[:, 1::2])
    return bboxes


def delta2bbox_batched(rois, deltas, means, stds, max_shape=None, wh_ratio_clip=16 / 1000,
                       clip_border=True):
    """mmdet v2/v3 delta2bbox on (B, N, 4) rois and (B, N, 4*K) deltas: reshape, tile, cat."""
    out_shape = deltas.shape
    num_classes = deltas.shape[-1] // 4
    deltas = deltas.reshape(-1, 4)
    means = means.reshape(1, -1)
    stds = stds.reshape(1, -1)
    denorm_deltas = deltas * stds + means
    dxy = denorm_deltas[:, :2]
    dwh = denorm_deltas[:, 2:]
    rois_ = np.tile(rois.reshape(-1, 4), (1, num_classes)).reshape(-1, 4)
    pxy = (rois_[:, :2] + rois_[:, 2:]) * 0.5
    pwh = rois_[:, 2:] - rois_[:, :2]
    dxy_wh = pwh * dxy
    max_ratio = np.abs(np.log(wh_ratio_clip)).item()
    dwh = np.clip(dwh, -max_ratio, max_ratio)
    gxy = pxy + dxy_wh
    gwh = pwh * np.exp(dwh)
    x1y1 = gxy - (gwh * 0.5)
    x2y2 = gxy + (gwh * 0.5)
    bboxes = np.concatenate([x1y1, x2y2], axis=-1)
    if clip_border and max_shape is not None:
        np.clip(bboxes[..., 0::2], 0, max_shape[1], out=bboxes[..., 0::2])
        np.clip(bboxes[..., 1::2], 0, max_shape[0], out=bboxes[..., 1::2])
    return bboxes.reshape(out_shape)


def bbox2delta(proposals, gt, means, stds):
    """mmdet DeltaXYWHBBoxCoder encode on [..., 4] boxes."""
    px = (proposals[..., 0] + proposals[..., 2]) * 0.5
    py = (proposals[..., 1] + proposals[..., 3]) * 0.5
    pw = proposals[..., 2] - proposals[..., 0]
    ph = proposals[..., 3] - proposals[..., 1]
    gx = (gt[..., 0] + gt[..., 2]) * 0.5
    gy = (gt[..., 1] + gt[..., 3]) * 0.5
    gw = gt[..., 2] - gt[..., 0]
    gh = gt[..., 3] - gt[..., 1]
    dx = (gx - px) / pw
    dy = (gy - py) / ph
    dw = np.log(gw / pw)
    dh = np.log(gh / ph)
    deltas = np.stack([dx, dy, dw, dh], axis=-1)
    deltas = (deltas - means) / stds
    return deltas


def tblr2bbox(priors, tblr, normalizer=4.0, normalize_by_wh=True, max_shape=None):
    """mmdet TBLRBBoxCoder decode: in-place scaling of the decoded distances through views."""
    loc_decode = tblr * normalizer
    prior_centers = (priors[..., 0:2] + priors[..., 2:4]) / 2
    if normalize_by_wh:
        wh = priors[..., 2:4] - priors[..., 0:2]
        w, h = wh[..., 0:1], wh[..., 1:2]
        loc_decode[..., :2] = h * loc_decode[..., :2]  # tb
        loc_decode[..., 2:] = w * loc_decode[..., 2:]  # lr
    top, bottom, left, right = (loc_decode[..., i:i + 1] for i in range(4))
    xmin = prior_centers[..., 0:1] - left
    xmax = prior_centers[..., 0:1] + right
    ymin = prior_centers[..., 1:2] - top
    ymax = prior_centers[..., 1:2] + bottom
    bboxes = np.concatenate((xmin, ymin, xmax, ymax), axis=-1)
    if max_shape is not None:
        np.clip(bboxes[..., 0::2], 0, max_shape[1], out=bboxes[..., 0::2])
        np.clip(bboxes[..., 1::2], 0, max_shape[0], out=bboxes[..., 1::2])
    return bboxes


def distance2bbox(points, distance, max_shape=None):
    """mmdet distance2bbox (FCOS/GFL): points (N, 2), distances (..., N, 4)."""
    x1 = points[..., 0] - distance[..., 0]
    y1 = points[..., 1] - distance[..., 1]
    x2 = points[..., 0] + distance[..., 2]
    y2 = points[..., 1] + distance[..., 3]
    bboxes = np.stack([x1, y1, x2, y2], -1)
    if max_shape is not None:
        bboxes[..., 0::2] = np.clip(bboxes[..., 0::2], 0, max_shape[1])
        bboxes[..., 1::2] = np.clip(bboxes[..., 1::2], 0, max_shape[0])
    return bboxes


def bbox2distance(points, bbox, max_dis=None, eps=0.1):
    """mmdet bbox2distance (GFL target encoding)."""
    left = points[:, 0] - bbox[:, 0]
    top = points[:, 1] - bbox[:, 1]
    right = bbox[:, 2] - points[:, 0]
    bottom = bbox[:, 3] - points[:, 1]
    if max_dis is not None:
        left = np.clip(left, 0, max_dis - eps)
        top = np.clip(top, 0, max_dis - eps)
        right = np.clip(right, 0, max_dis - eps)
        bottom = np.clip(bottom, 0, max_dis - eps)
    return np.stack([left, top, right, bottom], -1)


def centerness_target(bbox_targets):
    """FCOS centerness from (l, t, r, b) targets (mmdet uses [:, [0, 2]]; same as [:, 0::2])."""
    left_right = bbox_targets[:, 0::2]
    top_bottom = bbox_targets[:, 1::2]
    centerness = (left_right.min(axis=-1) / left_right.max(axis=-1)) * (
        top_bottom.min(axis=-1) / top_bottom.max(axis=-1))
    return np.sqrt(centerness)


# --------------------------------------------------------------------------------------------
# Box utilities
# --------------------------------------------------------------------------------------------

def clip_boxes_(boxes, img_shape):
    """Clip xyxy boxes to the image in place through strided views; returns the argument."""
    h, w = img_shape
    np.clip(boxes[..., 0::2], 0, w, out=boxes[..., 0::2])
    np.clip(boxes[..., 1::2], 0, h, out=boxes[..., 1::2])
    return boxes


def clip_boxes_batched(bboxes, img_shapes):
    """mmdet distance2bbox's tensor max_shape branch: per-image (h, w) limits, (B, N, 4)."""
    max_xy = np.flip(np.concatenate([img_shapes, img_shapes], axis=-1), -1).astype(bboxes.dtype)
    max_xy = np.expand_dims(max_xy, -2)
    min_xy = np.zeros_like(max_xy)
    bboxes = np.where(bboxes < min_xy, min_xy, bboxes)
    bboxes = np.where(bboxes > max_xy, max_xy, bboxes)
    return bboxes


def bbox_area(bboxes):
    return (bboxes[..., 2] - bboxes[..., 0]) * (bboxes[..., 3] - bboxes[..., 1])


def xyxy2cxcywh(bbox):
    """mmdet bbox_xyxy_to_cxcywh."""
    x1, y1, x2, y2 = bbox[..., 0], bbox[..., 1], bbox[..., 2], bbox[..., 3]
    return np.stack([(x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1), (y2 - y1)], axis=-1)


def cxcywh2xyxy(x):
    """YOLOv5 xywh2xyxy: copy, then column writes."""
    y = np.copy(x)
    y[..., 0] = x[..., 0] - x[..., 2] / 2
    y[..., 1] = x[..., 1] - x[..., 3] / 2
    y[..., 2] = x[..., 0] + x[..., 2] / 2
    y[..., 3] = x[..., 1] + x[..., 3] / 2
    return y


def cxcywh2xyxy_(x):
    """In place, in two dependent augmented assignments on one storage; returns None."""
    x[..., 0:2] -= x[..., 2:4] / 2
    x[..., 2:4] += x[..., 0:2]


def bbox_flip(bboxes, img_shape, direction="horizontal"):
    """mmdet bbox_flip on (N, 4*k) boxes."""
    flipped = bboxes.copy()
    h, w = img_shape
    if direction == "horizontal":
        flipped[..., 0::4] = w - bboxes[..., 2::4]
        flipped[..., 2::4] = w - bboxes[..., 0::4]
    elif direction == "vertical":
        flipped[..., 1::4] = h - bboxes[..., 3::4]
        flipped[..., 3::4] = h - bboxes[..., 1::4]
    else:
        flipped[..., 0::4] = w - bboxes[..., 2::4]
        flipped[..., 1::4] = h - bboxes[..., 3::4]
        flipped[..., 2::4] = w - bboxes[..., 0::4]
        flipped[..., 3::4] = h - bboxes[..., 1::4]
    return flipped


def bbox_rescale(bboxes, scale_factor=1.0):
    """mmdet bbox_rescale: scale boxes about their centres."""
    cx = (bboxes[:, 0] + bboxes[:, 2]) * 0.5
    cy = (bboxes[:, 1] + bboxes[:, 3]) * 0.5
    w = bboxes[:, 2] - bboxes[:, 0]
    h = bboxes[:, 3] - bboxes[:, 1]
    w = w * scale_factor
    h = h * scale_factor
    x1 = cx - 0.5 * w
    x2 = cx + 0.5 * w
    y1 = cy - 0.5 * h
    y2 = cy + 0.5 * h
    return np.stack([x1, y1, x2, y2], axis=-1)


def bbox_mapping_back_(det_bboxes, scale_factor):
    """Undo the test-time resize on (N, 5) detections in place: det_bboxes[:, :4] /= scale."""
    det_bboxes[:, :4] /= scale_factor


def bbox_overlaps(bboxes1, bboxes2, mode="iou", eps=1e-6):
    """mmdet bbox_overlaps, is_aligned=False: (..., N, 4) x (..., M, 4) -> (..., N, M)."""
    area1 = (bboxes1[..., 2] - bboxes1[..., 0]) * (bboxes1[..., 3] - bboxes1[..., 1])
    area2 = (bboxes2[..., 2] - bboxes2[..., 0]) * (bboxes2[..., 3] - bboxes2[..., 1])
    lt = np.maximum(bboxes1[..., :, None, :2], bboxes2[..., None, :, :2])
    rb = np.minimum(bboxes1[..., :, None, 2:], bboxes2[..., None, :, 2:])
    wh = np.maximum(rb - lt, 0)
    overlap = wh[..., 0] * wh[..., 1]
    union = area1[..., None] + area2[..., None, :] - overlap
    union = np.maximum(union, eps)
    ious = overlap / union
    if mode == "iou":
        return ious
    enclosed_lt = np.minimum(bboxes1[..., :, None, :2], bboxes2[..., None, :, :2])
    enclosed_rb = np.maximum(bboxes1[..., :, None, 2:], bboxes2[..., None, :, 2:])
    enclose_wh = np.maximum(enclosed_rb - enclosed_lt, 0)
    enclose_area = enclose_wh[..., 0] * enclose_wh[..., 1]
    enclose_area = np.maximum(enclose_area, eps)
    gious = ious - (enclose_area - union) / enclose_area
    return gious


def bbox_overlaps_aligned(bboxes1, bboxes2, eps=1e-6):
    """mmdet bbox_overlaps, is_aligned=True: (..., N, 4) x (..., N, 4) -> (..., N)."""
    area1 = (bboxes1[..., 2] - bboxes1[..., 0]) * (bboxes1[..., 3] - bboxes1[..., 1])
    area2 = (bboxes2[..., 2] - bboxes2[..., 0]) * (bboxes2[..., 3] - bboxes2[..., 1])
    lt = np.maximum(bboxes1[..., :2], bboxes2[..., :2])
    rb = np.minimum(bboxes1[..., 2:], bboxes2[..., 2:])
    wh = np.clip(rb - lt, 0, np.inf)
    overlap = wh[..., 0] * wh[..., 1]
    union = area1 + area2 - overlap
    union = np.maximum(union, eps)
    return overlap / union


# --------------------------------------------------------------------------------------------
# YOLO
# --------------------------------------------------------------------------------------------

def yolo_decode_(pred, anchors, stride):
    """YOLOv3 inference decode written into the prediction array; returns a view of it.

    pred: (bs, na, ny, nx, 5 + C) raw outputs; anchors: (na, 2) in pixels.
    """
    bs, na, ny, nx, no = pred.shape
    xv, yv = np.meshgrid(np.arange(nx), np.arange(ny))
    grid = np.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2).astype(pred.dtype)
    anchor_wh = anchors.reshape(1, na, 1, 1, 2)
    pred[..., 0:2] = (sigmoid(pred[..., 0:2]) + grid) * stride
    pred[..., 2:4] = np.exp(pred[..., 2:4]) * anchor_wh
    pred[..., 4:] = sigmoid(pred[..., 4:])
    return pred.reshape(bs, -1, no)


def yolov5_decode(x, anchors, stride):
    """YOLOv5 Detect.forward (inference) for one level: anchors (na, 2) in grid units."""
    bs, na, ny, nx, no = x.shape
    yv, xv = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    shape = (1, na, ny, nx, 2)
    grid = np.broadcast_to(np.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2), shape)
    grid = grid.astype(x.dtype) - 0.5
    anchor_grid = np.broadcast_to((anchors * stride).reshape(1, na, 1, 1, 2), shape)
    y = sigmoid(x)
    y[..., 0:2] = (y[..., 0:2] * 2 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y.reshape(bs, na * nx * ny, no)


def yolo_decode_f16_(pred, anchors, stride):
    """YOLOv5 decode of an FP16 engine's output, in float16, written into it; returns a view.

    pred: (bs, na, ny, nx, 5 + C) float16, as a TensorRT / ONNX Runtime FP16 engine returns it;
    anchors: (na, 2) float16 in grid units.  Every array operand is float16 and the Python
    scalars are weak, so NumPy computes and rounds every step in float16.
    """
    bs, na, ny, nx, no = pred.shape
    yv, xv = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    grid = np.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2).astype(pred.dtype)
    anchor_grid = (anchors * stride).reshape(1, na, 1, 1, 2)
    pred[...] = sigmoid(pred)
    pred[..., 0:2] = (pred[..., 0:2] * 2 - 0.5 + grid) * stride
    pred[..., 2:4] = (pred[..., 2:4] * 2) ** 2 * anchor_grid
    return pred.reshape(bs, -1, no)


def yolo_postprocess(pred, conf_thres):
    """YOLOv5 non_max_suppression prologue without the masks: boxes, best class, filtered conf.

    pred: (bs, n, 5 + C) decoded (cx, cy, w, h, obj, cls...).
    """
    scores = pred[..., 5:] * pred[..., 4:5]  # conf = obj_conf * cls_conf
    boxes = cxcywh2xyxy(pred[..., :4])
    conf = scores.max(axis=-1, keepdims=True)
    j = scores.argmax(axis=-1)
    keep = (conf[..., 0] > conf_thres) & (pred[..., 4] > conf_thres)
    conf = np.where(keep[..., None], conf, 0.0)
    return boxes, conf, j, keep


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------

def softmax(x, axis=-1):
    """Numerically stable softmax, as in RCNN bbox heads' get_bboxes."""
    x_max = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=axis, keepdims=True)


def score_threshold(cls_logits, score_thr):
    """Sigmoid scores, best class per box, and a threshold applied with np.where."""
    scores = sigmoid(cls_logits)
    max_scores = scores.max(axis=1)
    labels = scores.argmax(axis=1)
    keep = max_scores > score_thr
    max_scores = np.where(keep, max_scores, 0.0)
    labels = np.where(keep, labels, -1)
    return max_scores, labels, keep


def multiclass_nms_prep(multi_bboxes, multi_scores, score_thr):
    """mmdet multiclass_nms up to the NMS call, with batched_nms's per-class offset trick.

    multi_bboxes (N, 4), multi_scores (N, C + 1) whose last column is background.
    """
    num_classes = multi_scores.shape[1] - 1
    bboxes = np.broadcast_to(multi_bboxes[:, None], (multi_bboxes.shape[0], num_classes, 4))
    scores = multi_scores[:, :-1]
    labels = np.broadcast_to(np.arange(num_classes)[None, :], scores.shape)
    bboxes = bboxes.reshape(-1, 4)
    scores = scores.reshape(-1)
    labels = labels.reshape(-1)
    valid_mask = scores > score_thr
    max_coordinate = bboxes.max()
    offsets = labels.astype(bboxes.dtype) * (max_coordinate + 1)
    boxes_for_nms = bboxes + offsets[:, None]
    return boxes_for_nms, np.where(valid_mask, scores, 0), labels, valid_mask


def retina_decode(cls_score, bbox_pred, anchors, means, stds, max_shape, score_thr):
    """mmdet AnchorHead._get_bboxes_single for one level, batched, without top-k/NMS.

    cls_score (B, A*C, H, W), bbox_pred (B, A*4, H, W), anchors (H*W*A, 4).
    """
    B = cls_score.shape[0]
    num_classes = cls_score.shape[1] * 4 // bbox_pred.shape[1]
    scores = sigmoid(cls_score.transpose(0, 2, 3, 1).reshape(B, -1, num_classes))
    deltas = bbox_pred.transpose(0, 2, 3, 1).reshape(B, -1, 4)
    rois = np.broadcast_to(anchors[None], deltas.shape)
    bboxes = delta2bbox_batched(rois, deltas, means, stds, max_shape=max_shape)
    max_scores = scores.max(axis=-1)
    labels = scores.argmax(axis=-1)
    max_scores = np.where(max_scores > score_thr, max_scores, 0)
    return bboxes, max_scores, labels


# --------------------------------------------------------------------------------------------
# Data-dependent post-processing: masks, sorting, top-k
# --------------------------------------------------------------------------------------------

def score_topk(boxes, scores, labels, score_thr, k):
    """Score threshold, then the k best of what is left (mmdet's nms_pre / filter_scores_and_topk).

    boxes (N, 4), scores (N,), labels (N,); returns the kept top-k boxes, scores and labels.
    """
    keep = scores > score_thr
    s = scores[keep]
    b = boxes[keep]
    lbl = labels[keep]
    order = np.argsort(-s, kind="stable")[:k]
    return b[order], s[order], lbl[order]


def score_topk_desc(boxes, scores, labels, score_thr, k):
    """score_topk with the order written ``s.argsort()[::-1][:k]`` (default kind, distinct scores)."""
    keep = scores > score_thr
    s = scores[keep]
    b = boxes[keep]
    lbl = labels[keep]
    order = s.argsort()[::-1][:k]
    return b[order], s[order], lbl[order]


def yolov5_prologue(prediction, conf_thres, max_nms=300):
    """YOLOv5 non_max_suppression up to the NMS call, per image: masks, concat, sort, top-k.

    prediction (bs, n, 5 + C) decoded (cx, cy, w, h, obj, cls...); returns a list of (k, 6)
    arrays (x1, y1, x2, y2, conf, class).  YOLOv5's ``if not x.shape[0]: continue`` (Python
    control flow on a run-time length) is left out.
    """
    bs = prediction.shape[0]
    xc = prediction[..., 4] > conf_thres  # candidates
    output = [np.zeros((0, 6), dtype=prediction.dtype)] * bs
    for xi, x in enumerate(prediction):  # image index, image inference
        x = x[xc[xi]]  # confidence
        x[:, 5:] *= x[:, 4:5]  # conf = obj_conf * cls_conf
        box = cxcywh2xyxy(x[:, :4])
        conf = x[:, 5:].max(1, keepdims=True)
        j = x[:, 5:].argmax(1)[:, None]
        x = np.concatenate((box, conf, j.astype(x.dtype)), 1)[conf.reshape(-1) > conf_thres]
        x = x[x[:, 4].argsort(kind="stable")[::-1][:max_nms]]  # sort by confidence
        output[xi] = x
    return output


def batched_nms_offsets(boxes, scores, labels, score_thr):
    """mmdet multiclass_nms + batched_nms up to the NMS call: mask, class offsets, sort.

    boxes (N, 4), scores (N,), labels (N,) of every (box, class) pair, flattened.
    """
    valid = scores > score_thr
    boxes = boxes[valid]
    scores = scores[valid]
    labels = labels[valid]
    max_coordinate = boxes.max()
    offsets = labels.astype(boxes.dtype) * (max_coordinate + 1)
    boxes_for_nms = boxes + offsets[:, None]
    order = scores.argsort(kind="stable")[::-1]
    return boxes_for_nms[order], scores[order], labels[order]


def mask_writes(boxes, offsets, scores, labels, score_thr):
    """Boolean-mask writes into the caller's arrays after NMS; returns None.

    boxes (N, 4) still shifted by batched_nms's class offsets (N, 1), scores (N,), labels (N,).
    """
    scores[scores < score_thr] = 0
    valid = scores > 0
    boxes[~valid] = 0
    boxes[valid] -= offsets[valid]
    labels[scores == 0] = -1


def argsort_scores(scores):
    """Stable argsort of a score vector (the sort in front of every NMS)."""
    return np.argsort(scores, kind="stable")


def argsort_scores_default(scores):
    """np.argsort with NumPy's default kind, on distinct scores (so the order is unique)."""
    return np.argsort(scores)


# --------------------------------------------------------------------------------------------
# Test-time augmentation / preprocessing
# --------------------------------------------------------------------------------------------

def centernet_flip_merge(heat):
    """CenterNet flip test: average a map with its flipped twin (negative-stride view)."""
    return (heat[0:1] + heat[1:2, :, :, ::-1]) * 0.5


def image_preprocess(img, mean, std):
    """BGR HWC image -> normalized RGB NCHW: a[..., ::-1], broadcast mean/std, transpose."""
    img = img[..., ::-1]
    img = (img - mean) / std
    return img.transpose(2, 0, 1)[None]


def image_preprocess_u8(img, mean, std):
    """uint8 BGR HWC image(s) -> float32 normalized RGB NCHW, as detection demos write it.

    img: (H, W, 3) or a batch (B, H, W, 3) uint8; mean, std: (3,) float32.  uint8 converts to
    float32 exactly and the rest is one subtraction and one division, each rounded once, so the
    result is the same bits wherever those are float32 operations.
    """
    x = img[..., ::-1].astype(np.float32)  # BGR -> RGB, then float32
    x = (x - mean) / std
    if img.ndim == 3:
        return x.transpose(2, 0, 1)[None]  # HWC -> CHW, and the batch dimension
    return x.transpose(0, 3, 1, 2)  # a batch: NHWC -> NCHW


# --------------------------------------------------------------------------------------------
# NMS loops: Python loops over traced values (strider does not compile them yet: issue 17)
# --------------------------------------------------------------------------------------------

def py_cpu_nms(dets, thresh):
    """Fast R-CNN's py_cpu_nms: take the best box, drop what overlaps it by more than thresh.

    dets (N, 5) rows of x1, y1, x2, y2, score; widths and heights count whole pixels (+ 1).
    Returns the kept row indices, best first (as an array; the original returns the list).
    """
    x1 = dets[:, 0]
    y1 = dets[:, 1]
    x2 = dets[:, 2]
    y2 = dets[:, 3]
    scores = dets[:, 4]

    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]

    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        xx1 = np.maximum(x1[i], x1[order[1:]])
        yy1 = np.maximum(y1[i], y1[order[1:]])
        xx2 = np.minimum(x2[i], x2[order[1:]])
        yy2 = np.minimum(y2[i], y2[order[1:]])

        w = np.maximum(0.0, xx2 - xx1 + 1)
        h = np.maximum(0.0, yy2 - yy1 + 1)
        inter = w * h
        ovr = inter / (areas[i] + areas[order[1:]] - inter)

        inds = np.where(ovr <= thresh)[0]
        order = order[inds + 1]
    return np.array(keep)


def _box_area(left_top, right_bottom):
    """Areas of boxes given by their corners (..., 2); an empty overlap has area 0."""
    wh = np.maximum(right_bottom - left_top, 0.0)
    return wh[..., 0] * wh[..., 1]


def _box_iou(boxes0, boxes1, eps=1e-5):
    """IoU of xyxy boxes, broadcast over the leading dimensions."""
    lt = np.maximum(boxes0[..., :2], boxes1[..., :2])
    rb = np.minimum(boxes0[..., 2:], boxes1[..., 2:])
    overlap = _box_area(lt, rb)
    area0 = _box_area(boxes0[..., :2], boxes0[..., 2:])
    area1 = _box_area(boxes1[..., :2], boxes1[..., 2:])
    return overlap / (area0 + area1 - overlap + eps)


def hard_nms(box_scores, iou_threshold, top_k=-1, candidate_size=200):
    """Hard NMS as the SSD ports and the light-weight face detectors write it.

    box_scores (N, 5) rows of x1, y1, x2, y2, score.  Only the candidate_size best boxes take
    part; the loop keeps the best remaining one and drops the rest that overlap it by more than
    iou_threshold, until none is left or top_k (> 0) are kept.  Returns the kept rows.
    """
    scores = box_scores[:, -1]
    boxes = box_scores[:, :-1]
    picked = []
    indexes = np.argsort(scores)
    indexes = indexes[-candidate_size:]
    while len(indexes) > 0:
        current = indexes[-1]
        picked.append(current)
        if 0 < top_k == len(picked) or len(indexes) == 1:
            break
        current_box = boxes[current, :]
        indexes = indexes[:-1]
        rest_boxes = boxes[indexes, :]
        iou = _box_iou(rest_boxes, np.expand_dims(current_box, axis=0))
        indexes = indexes[iou <= iou_threshold]
    return box_scores[picked, :]


def greedy_nms_class_tagged(dets, thresh):
    """Greedy NMS over boxes tagged with their class: a box suppresses only boxes of its class.

    dets (N, 6) rows of x1, y1, x2, y2, score, class.  A for loop over the boxes in score order
    skips the suppressed ones; each kept box marks the later boxes of its class that overlap it
    by more than thresh.  Returns the kept row indices, best first.
    """
    x1, y1, x2, y2 = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3]
    scores = dets[:, 4]
    labels = dets[:, 5]
    areas = (x2 - x1) * (y2 - y1)
    order = scores.argsort()[::-1]
    suppressed = np.zeros(dets.shape[0], dtype=np.bool_)
    keep = []
    for _i in range(order.shape[0]):
        i = order[_i]
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[_i + 1:]
        xx1 = np.maximum(x1[i], x1[rest])
        yy1 = np.maximum(y1[i], y1[rest])
        xx2 = np.minimum(x2[i], x2[rest])
        yy2 = np.minimum(y2[i], y2[rest])
        inter = np.maximum(xx2 - xx1, 0) * np.maximum(yy2 - yy1, 0)
        iou = inter / (areas[i] + areas[rest] - inter)
        suppressed[rest] |= (iou > thresh) & (labels[rest] == labels[i])
    return np.array(keep)


def _nms(boxes, scores, nms_thr):
    """Single-class NMS of the YOLOX demo style: the py_cpu_nms loop on separate boxes and
    scores; returns the kept indices as a list."""
    x1 = boxes[:, 0]
    y1 = boxes[:, 1]
    x2 = boxes[:, 2]
    y2 = boxes[:, 3]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        others = order[1:]
        w = np.maximum(0.0, np.minimum(x2[i], x2[others]) - np.maximum(x1[i], x1[others]) + 1)
        h = np.maximum(0.0, np.minimum(y2[i], y2[others]) - np.maximum(y1[i], y1[others]) + 1)
        inter = w * h
        ovr = inter / (areas[i] + areas[others] - inter)
        order = others[ovr <= nms_thr]
    return keep


def _multiclass_nms_class_aware(boxes, scores, score_thr, nms_thr):
    final_dets = []
    num_classes = scores.shape[1]
    for cls_ind in range(num_classes):
        cls_scores = scores[:, cls_ind]
        valid_score_mask = cls_scores > score_thr
        if valid_score_mask.sum() == 0:
            continue
        valid_scores = cls_scores[valid_score_mask]
        valid_boxes = boxes[valid_score_mask]
        keep = _nms(valid_boxes, valid_scores, nms_thr)
        if len(keep) > 0:
            cls_inds = np.ones((len(keep), 1)) * cls_ind
            dets = np.concatenate([valid_boxes[keep], valid_scores[keep, None], cls_inds], 1)
            final_dets.append(dets)
    if len(final_dets) == 0:
        return None
    return np.concatenate(final_dets, 0)


def _multiclass_nms_class_agnostic(boxes, scores, score_thr, nms_thr):
    cls_inds = scores.argmax(1)
    cls_scores = scores[np.arange(len(cls_inds)), cls_inds]
    valid_score_mask = cls_scores > score_thr
    if valid_score_mask.sum() == 0:
        return None
    valid_scores = cls_scores[valid_score_mask]
    valid_boxes = boxes[valid_score_mask]
    valid_cls_inds = cls_inds[valid_score_mask]
    keep = _nms(valid_boxes, valid_scores, nms_thr)
    dets = None
    if keep:
        dets = np.concatenate([valid_boxes[keep], valid_scores[keep, None],
                               valid_cls_inds[keep, None]], 1)
    return dets


def multiclass_nms(boxes, scores, score_thr, nms_thr, class_agnostic):
    """YOLOX-style multi-class NMS: per class (a Python loop over the classes) or over each
    box's best class (class_agnostic), a score threshold and then a py_cpu_nms loop.

    boxes (N, 4), scores (N, C).  Returns (k, 6) rows of x1, y1, x2, y2, score, class, or None
    when no score passes.  As in YOLOX, the class column comes from a float64 ``np.ones`` (class
    aware) or the int64 argmax (agnostic), so the rows are float64 whatever the boxes' dtype.
    """
    if class_agnostic:
        nms_method = _multiclass_nms_class_agnostic
    else:
        nms_method = _multiclass_nms_class_aware
    return nms_method(boxes, scores, score_thr, nms_thr)


def soft_nms(dets, sigma=0.5, Nt=0.3, threshold=0.001, method=1):
    """Soft-NMS (Bodla et al.) with the rows of dets swapped and rescored in place.

    dets (N, 5) rows of x1, y1, x2, y2, score, written in place: at step i the best remaining
    row is swapped into row i and the scores of the rows after it decay with their overlap ov
    with it, by 1 - ov where ov > Nt (method 1, linear), by exp(-ov^2 / sigma) (2, Gaussian) or
    to 0 where ov > Nt (0, hard NMS).  Returns the rows whose score stays above threshold.
    """
    N = dets.shape[0]
    areas = (dets[:, 2] - dets[:, 0] + 1) * (dets[:, 3] - dets[:, 1] + 1)
    for i in range(N):
        maxpos = i + np.argmax(dets[i:, 4])
        if maxpos != i:  # swap the best remaining box into row i
            row = dets[i, :].copy()
            dets[i, :] = dets[maxpos, :]
            dets[maxpos, :] = row
            areas[i], areas[maxpos] = areas[maxpos], areas[i]
        tx1, ty1, tx2, ty2 = dets[i, 0], dets[i, 1], dets[i, 2], dets[i, 3]
        iw = np.minimum(tx2, dets[i + 1:, 2]) - np.maximum(tx1, dets[i + 1:, 0]) + 1
        ih = np.minimum(ty2, dets[i + 1:, 3]) - np.maximum(ty1, dets[i + 1:, 1]) + 1
        inter = np.maximum(iw, 0.0) * np.maximum(ih, 0.0)
        ov = inter / (areas[i] + areas[i + 1:] - inter)
        if method == 1:  # linear
            weight = np.where(ov > Nt, 1 - ov, 1)
        elif method == 2:  # gaussian
            weight = np.exp(-(ov * ov) / sigma)
        else:  # original NMS
            weight = np.where(ov > Nt, 0.0, 1.0)
        dets[i + 1:, 4] *= weight
    keep = np.where(dets[:, 4] > threshold)[0]
    return keep


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

EXACT = {"float32": (0.0, 0.0), "float64": (0.0, 0.0)}
# exp / log / sqrt / division: a few ulps relative, plus an absolute floor where results can
# cancel to near zero (coordinates are up to ~1000, so 1e-4 is an ulp or two in float32 there).
# float16 (an ulp is 2**-10 = 9.8e-4 relative): four ulps, since a libm's exp may be an ulp off
# and a peer that keeps float32 between steps (Inductor, XLA's excess precision) rounds once
# where NumPy rounds after each step (2.6 ulps at most on yolo_decode_f16_, emulated); the floor
# is 2 ulps of a sigmoid near 0.25 times 2 * stride 8, where YOLO's 2 * s - 0.5 cancels.
TRANSCENDENTAL = {"float16": (4e-3, 4e-3), "float32": (1e-6, 1e-4), "float64": (1e-12, 1e-9)}
# Ratios in [0, 1] (IoU, sigmoid, ...): small absolute floor.
UNIT = {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12)}
# Float reductions (softmax's sum).
REDUCTION = {"float32": (1e-5, 1e-7), "float64": (1e-12, 1e-15)}
FLOATS = ("float32", "float64")


@dataclass(frozen=True)
class Head:
    name: str
    fn: object
    make_inputs: object  # (size name or config dict, rng, dtype=float32) -> (args, kwargs)
    static_argnames: tuple = ()
    tol: dict = field(default_factory=lambda: dict(EXACT))
    dtypes: tuple = FLOATS
    description: str = ""

    def inputs(self, size="tiny", dtype="float32", seed=0):
        return self.make_inputs(size, np.random.default_rng(seed), dtype)

    def tolerance(self, dtype):
        """(rtol, atol) for comparing this head's results computed in ``dtype``."""
        return self.tol.get(np.dtype(dtype).name, (0.0, 0.0))

    @property
    def rtol(self):
        return self.tolerance(self.dtypes[0])[0]


HEADS = {}


def register(name, fn, static_argnames=(), tol=EXACT, dtypes=FLOATS):
    def deco(make_inputs):
        def make(size, rng, dtype=np.float32):
            return make_inputs(size_config(size), rng, np.dtype(dtype))
        make.__name__ = f"make_inputs_{name}"
        doc = (fn.__doc__ or "").strip().splitlines()
        HEADS[name] = Head(name, fn, make, tuple(static_argnames), dict(tol), tuple(dtypes),
                           doc[0] if doc else "")
        return make_inputs
    return deco


def _anchor_scales(dtype):
    return (4 * 2.0 ** (np.arange(3) / 3)).astype(dtype), np.array([0.5, 1.0, 2.0], dtype=dtype)


@register("base_anchors", base_anchors, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    scales, ratios = _anchor_scales(dtype)
    return (scales, ratios, cfg["stride"]), dict(center_offset=0.5)


@register("generate_anchors", generate_anchors, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    base_size = 16
    base_anchor = np.array([1, 1, base_size, base_size], dtype=dtype) - 1
    ratios = np.array([0.5, 1.0, 2.0], dtype=dtype)
    scales = (2.0 ** np.arange(3, 6)).astype(dtype)
    return (base_anchor, ratios, scales), {}


@register("grid_anchors", grid_anchors, static_argnames=("featmap_size",))
def _(cfg, rng, dtype):
    scales, ratios = _anchor_scales(dtype)
    base = base_anchors(scales[:1], ratios, cfg["stride"], 0.0)[: cfg["A"]]
    return (base,), dict(featmap_size=(cfg["H"], cfg["W"]), stride=cfg["stride"])


@register("grid_points", grid_points, static_argnames=("featmap_size", "with_stride", "dtype"))
def _(cfg, rng, dtype):
    return ((cfg["H"], cfg["W"]), cfg["stride"]), dict(offset=0.5, with_stride=True, dtype=dtype)


@register("ssd_priors", ssd_priors, static_argnames=("feat_size", "clip"), tol=UNIT)
def _(cfg, rng, dtype):
    s = cfg["stride"] * 4.0
    wh = np.array([[s, s], [s * 1.5, s * 1.5], [s * 1.4142, s / 1.4142], [s / 1.4142, s * 1.4142]],
                  dtype=dtype)
    return (wh, (cfg["H"], cfg["W"]), float(cfg["H"] * cfg["stride"])), dict(clip=True)


@register("valid_flags", valid_flags,
          static_argnames=("featmap_size", "pad_shape", "stride", "num_base_anchors"),
          dtypes=("bool",))
def _(cfg, rng, dtype):
    h, w = _img_shape(cfg)
    # A padded image a bit smaller than the feature map covers, so some flags are False.
    pad = (h - 2 * cfg["stride"] - 3, w - cfg["stride"])
    return (), dict(featmap_size=(cfg["H"], cfg["W"]), pad_shape=pad, stride=cfg["stride"],
                    num_base_anchors=cfg["A"])


@register("anchor_inside_flags", anchor_inside_flags,
          static_argnames=("img_shape", "allowed_border"))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    anchors = _rand_boxes(rng, (_rows(cfg),), img, dtype, outside=0.1)
    flags = rng.random(_rows(cfg)) < 0.9
    return (anchors, flags), dict(img_shape=img, allowed_border=0)


@register("delta2bbox", delta2bbox, static_argnames=("max_shape", "wh_ratio_clip"),
          tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    n = cfg["B"] * cfg["R"]
    rois = _rand_boxes(rng, (n,), img, dtype)
    deltas = (rng.standard_normal((n, 4 * cfg["K"])) * 2).astype(dtype)  # some hit the clamp
    means, stds = _means_stds(dtype)
    return (rois, deltas, means, stds), dict(max_shape=img, wh_ratio_clip=16 / 1000)


@register("delta2bbox_batched", delta2bbox_batched,
          static_argnames=("max_shape", "wh_ratio_clip", "clip_border"), tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    n = _num_anchors(cfg)
    rois = _rand_boxes(rng, (cfg["B"], n), img, dtype)
    deltas = (rng.standard_normal((cfg["B"], n, 4 * cfg["K"])) * 2).astype(dtype)
    means, stds = _means_stds(dtype)
    return (rois, deltas, means, stds, img), dict(wh_ratio_clip=16 / 1000, clip_border=True)


@register("bbox2delta", bbox2delta, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    proposals = _rand_boxes(rng, (_rows(cfg),), img, dtype)
    gt = _rand_boxes(rng, (_rows(cfg),), img, dtype)
    means, stds = _means_stds(dtype)
    return (proposals, gt, means, stds), {}


@register("tblr2bbox", tblr2bbox, static_argnames=("normalize_by_wh", "max_shape"))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    priors = _rand_boxes(rng, (_rows(cfg),), img, dtype)
    tblr = rng.uniform(0.0, 0.5, size=(_rows(cfg), 4)).astype(dtype)
    return (priors, tblr), dict(normalizer=4.0, normalize_by_wh=True, max_shape=img)


@register("distance2bbox", distance2bbox, static_argnames=("max_shape",))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    points = grid_points((cfg["H"], cfg["W"]), cfg["stride"], with_stride=False, dtype=dtype)
    distance = rng.uniform(0, 8 * cfg["stride"], size=(points.shape[0], 4)).astype(dtype)
    return (points, distance), dict(max_shape=img)


@register("distance2bbox_batched", distance2bbox, static_argnames=("max_shape",))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    points = grid_points((cfg["H"], cfg["W"]), cfg["stride"], with_stride=False, dtype=dtype)
    distance = rng.uniform(0, 8 * cfg["stride"], size=(cfg["B"], points.shape[0], 4)).astype(dtype)
    return (points, distance), dict(max_shape=img)


@register("bbox2distance", bbox2distance, static_argnames=("max_dis",))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    points = grid_points((cfg["H"], cfg["W"]), cfg["stride"], with_stride=False, dtype=dtype)
    bbox = _rand_boxes(rng, (points.shape[0],), img, dtype)
    return (points, bbox), dict(max_dis=16, eps=0.1)


@register("centerness_target", centerness_target, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    ltrb = rng.uniform(1.0, 64.0, size=(_rows(cfg), 4)).astype(dtype)
    return (ltrb,), {}


@register("clip_boxes_", clip_boxes_, static_argnames=("img_shape",))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    return (_rand_boxes(rng, (_rows(cfg),), img, dtype, outside=0.2), img), {}


@register("clip_boxes_batched", clip_boxes_batched)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    boxes = _rand_boxes(rng, (cfg["B"], _num_anchors(cfg)), img, dtype, outside=0.2)
    shapes = np.stack([rng.integers(img[0] // 2, img[0] + 1, size=cfg["B"]),
                       rng.integers(img[1] // 2, img[1] + 1, size=cfg["B"])], axis=-1)
    return (boxes, shapes), {}


@register("bbox_area", bbox_area)
def _(cfg, rng, dtype):
    return (_rand_boxes(rng, (_rows(cfg),), _img_shape(cfg), dtype),), {}


@register("xyxy2cxcywh", xyxy2cxcywh)
def _(cfg, rng, dtype):
    return (_rand_boxes(rng, (_rows(cfg),), _img_shape(cfg), dtype),), {}


@register("cxcywh2xyxy", cxcywh2xyxy)
def _(cfg, rng, dtype):
    return (xyxy2cxcywh(_rand_boxes(rng, (cfg["B"], _num_anchors(cfg)), _img_shape(cfg), dtype)),), {}


@register("cxcywh2xyxy_", cxcywh2xyxy_)
def _(cfg, rng, dtype):
    return (xyxy2cxcywh(_rand_boxes(rng, (_rows(cfg),), _img_shape(cfg), dtype)),), {}


@register("bbox_flip", bbox_flip, static_argnames=("img_shape", "direction"))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    boxes = _rand_boxes(rng, (cfg["B"] * cfg["R"], cfg["K"]), img, dtype).reshape(-1, 4 * cfg["K"])
    return (boxes, img), dict(direction="horizontal")


@register("bbox_flip_diagonal", bbox_flip, static_argnames=("img_shape", "direction"))
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    return (_rand_boxes(rng, (_rows(cfg),), img, dtype), img), dict(direction="diagonal")


@register("bbox_rescale", bbox_rescale)
def _(cfg, rng, dtype):
    return (_rand_boxes(rng, (_rows(cfg),), _img_shape(cfg), dtype),), dict(scale_factor=1.5)


@register("bbox_mapping_back_", bbox_mapping_back_, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    n = cfg["B"] * cfg["R"]
    det = np.concatenate([_rand_boxes(rng, (n,), _img_shape(cfg), dtype),
                          rng.random((n, 1)).astype(dtype)], axis=1)
    scale = np.array([1.6, 1.5, 1.6, 1.5], dtype=dtype)
    return (det, scale), {}


@register("bbox_overlaps", bbox_overlaps, static_argnames=("mode",), tol=UNIT)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    anchors = _rand_boxes(rng, (_rows(cfg),), img, dtype)
    gt = _rand_boxes(rng, (cfg["G"],), img, dtype)
    gt[0] = anchors[0]  # an exact match
    return (anchors, gt), {}


@register("giou_batched", bbox_overlaps, static_argnames=("mode",), tol=UNIT)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    pred = _rand_boxes(rng, (cfg["B"], _num_anchors(cfg)), img, dtype)
    gt = _rand_boxes(rng, (cfg["B"], cfg["G"]), img, dtype)
    return (pred, gt), dict(mode="giou", eps=1e-6)


@register("bbox_overlaps_aligned", bbox_overlaps_aligned, tol=UNIT)
def _(cfg, rng, dtype):
    img = _img_shape(cfg)
    a = _rand_boxes(rng, (_rows(cfg),), img, dtype)
    b = (a + rng.normal(0, 8, size=a.shape)).astype(dtype)
    return (a, b), dict(eps=1e-6)


def _yolo_pred(cfg, rng, dtype):
    return (rng.standard_normal((cfg["B"], cfg["A"], cfg["H"], cfg["W"], 5 + cfg["C"])) * 1.5
            ).astype(dtype)


@register("yolo_decode_", yolo_decode_, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    anchors = np.array([[10, 13], [16, 30], [33, 23]][: cfg["A"]], dtype=dtype)
    return (_yolo_pred(cfg, rng, dtype), anchors, cfg["stride"]), {}


@register("yolo_decode_f16_", yolo_decode_f16_, tol=TRANSCENDENTAL, dtypes=("float16",))
def _(cfg, rng, dtype):
    dtype = np.float16  # the head's own, whatever is asked (as valid_flags' bool)
    anchors = np.array([[1.25, 1.625], [2.0, 3.75], [4.125, 2.875]][: cfg["A"]], dtype=dtype)
    return (_yolo_pred(cfg, rng, dtype), anchors, cfg["stride"]), {}


@register("yolov5_decode", yolov5_decode, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    anchors = np.array([[1.25, 1.625], [2.0, 3.75], [4.125, 2.875]][: cfg["A"]], dtype=dtype)
    return (_yolo_pred(cfg, rng, dtype), anchors, cfg["stride"]), {}


@register("yolo_postprocess", yolo_postprocess)
def _(cfg, rng, dtype):
    pred = _yolo_pred(cfg, rng, dtype).reshape(cfg["B"], -1, 5 + cfg["C"])
    pred[..., :4] = xyxy2cxcywh(_rand_boxes(rng, pred.shape[:2], _img_shape(cfg), dtype))
    pred[..., 4:] = sigmoid(pred[..., 4:])
    return (pred,), dict(conf_thres=0.25)


@register("softmax", softmax, static_argnames=("axis",), tol=REDUCTION)
def _(cfg, rng, dtype):
    logits = (rng.standard_normal((cfg["B"] * cfg["R"], cfg["C"] + 1)) * 3).astype(dtype)
    return (logits,), dict(axis=-1)


@register("softmax_batched", softmax, static_argnames=("axis",), tol=REDUCTION)
def _(cfg, rng, dtype):
    logits = (rng.standard_normal((cfg["B"], _num_anchors(cfg), cfg["C"] + 1)) * 3).astype(dtype)
    return (logits,), dict(axis=-1)


@register("score_threshold", score_threshold, tol=UNIT)
def _(cfg, rng, dtype):
    logits = (rng.standard_normal((_rows(cfg), cfg["C"])) * 2).astype(dtype)
    return (logits,), dict(score_thr=0.9)


@register("multiclass_nms_prep", multiclass_nms_prep)
def _(cfg, rng, dtype):
    n = cfg["B"] * cfg["R"]
    boxes = _rand_boxes(rng, (n,), _img_shape(cfg), dtype)
    scores = rng.random((n, cfg["C"] + 1)).astype(dtype)
    return (boxes, scores), dict(score_thr=0.05)


@register("retina_decode", retina_decode, static_argnames=("max_shape",), tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    B, A, H, W, C = cfg["B"], cfg["A"], cfg["H"], cfg["W"], cfg["C"]
    scales, ratios = _anchor_scales(dtype)
    base = base_anchors(scales[:1], ratios, cfg["stride"], 0.0)[:A]
    anchors = grid_anchors(base, (H, W), cfg["stride"])
    cls_score = (rng.standard_normal((B, A * C, H, W)) * 2 - 2).astype(dtype)
    bbox_pred = (rng.standard_normal((B, A * 4, H, W)) * 0.5).astype(dtype)
    means, stds = _means_stds(dtype)
    return (cls_score, bbox_pred, anchors, means, stds), dict(max_shape=_img_shape(cfg),
                                                              score_thr=0.05)


def _distinct_scores(rng, n, dtype, low=0.0, high=1.0):
    """``n`` distinct scores in [low, high) in ``dtype``, in random order (no ties to break)."""
    while True:
        s = np.unique(rng.uniform(low, high, size=n + n // 8 + 8).astype(dtype))
        if s.size >= n:
            return rng.permutation(s)[:n]


def _topk(cfg):
    return min(1000, _rows(cfg) // 4)  # mmdet's nms_pre = 1000; a quarter of the rows when tiny


@register("score_topk", score_topk, static_argnames=("k",))
def _(cfg, rng, dtype):
    n = _rows(cfg)
    boxes = _rand_boxes(rng, (n,), _img_shape(cfg), dtype)
    scores = _distinct_scores(rng, n, dtype)
    labels = rng.integers(0, cfg["C"], size=n)
    return (boxes, scores, labels), dict(score_thr=0.05, k=_topk(cfg))


@register("score_topk_desc", score_topk_desc, static_argnames=("k",))
def _(cfg, rng, dtype):
    return HEADS["score_topk"].make_inputs(cfg, rng, dtype)


def _letterbox_side(cfg):
    """The side of YOLOv5's square letterboxed input: 640 px at the image and batch sizes, a
    multiple of 32 no larger than the feature map's image below that (32 px at tiny)."""
    return max(32, min(640, cfg["H"] * cfg["stride"]) // 32 * 32)


def _yolov5_rows(cfg):
    """Rows of YOLOv5's output for a square letterboxed image: 3 anchors on strides 8, 16, 32
    (25,200 at the default 640 px; a 32 px image at the tiny size)."""
    side = _letterbox_side(cfg)
    return 3 * sum((side // s) ** 2 for s in (8, 16, 32))


@register("yolov5_prologue", yolov5_prologue, static_argnames=("max_nms",))
def _(cfg, rng, dtype):
    B, n, C = cfg["B"], _yolov5_rows(cfg), cfg["C"]
    pred = (rng.standard_normal((B, n, 5 + C)) * 1.5).astype(dtype)
    pred[..., :4] = xyxy2cxcywh(_rand_boxes(rng, (B, n), (640, 640), dtype))
    # Most anchors see background: objectness far below conf_thres, except on a few percent of
    # them, some of which still fall below it.
    obj = rng.standard_normal((B, n)) - 4
    for b in range(B):
        hits = rng.choice(n, size=max(4, n * 3 // 100), replace=False)
        obj[b, hits] = rng.uniform(-1.5, 4.0, size=hits.size)
    pred[..., 4] = obj
    pred[..., 5:] -= 2
    pred[..., 4:] = sigmoid(pred[..., 4:])
    return (pred,), dict(conf_thres=0.25, max_nms=300)


@register("batched_nms_offsets", batched_nms_offsets)
def _(cfg, rng, dtype):
    n, C = cfg["B"] * cfg["R"], cfg["C"]
    rois = _rand_boxes(rng, (n,), _img_shape(cfg), dtype)
    logits = rng.standard_normal((n, C + 1)) * 2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    scores = (e / e.sum(axis=1, keepdims=True))[:, :-1].astype(dtype)  # drop the background
    boxes = np.broadcast_to(rois[:, None], (n, C, 4)).reshape(-1, 4)
    labels = np.broadcast_to(np.arange(C)[None, :], (n, C)).reshape(-1)
    return (boxes, scores.reshape(-1), labels), dict(score_thr=0.05)


@register("mask_writes", mask_writes)
def _(cfg, rng, dtype):
    n = _rows(cfg)
    boxes = _rand_boxes(rng, (n,), _img_shape(cfg), dtype)
    labels = rng.integers(0, cfg["C"], size=n)
    offsets = (labels.astype(dtype) * (boxes.max() + 1))[:, None]
    scores = rng.random(n).astype(dtype)
    return (boxes + offsets, offsets, scores, labels), dict(score_thr=0.3)


def _num_scores(cfg):
    return 5 * _rows(cfg)  # 102,000 scores per image


@register("argsort_scores", argsort_scores)
def _(cfg, rng, dtype):
    # sigmoid-ed logits rounded to the dtype: ties occur (float32), the stable order decides them
    return (sigmoid(rng.standard_normal(_num_scores(cfg)) * 2).astype(dtype),), {}


@register("argsort_scores_default", argsort_scores_default)
def _(cfg, rng, dtype):
    return (_distinct_scores(rng, _num_scores(cfg), dtype),), {}


@register("centernet_flip_merge", centernet_flip_merge)
def _(cfg, rng, dtype):
    heat = rng.random((2, cfg["C"], cfg["H"] * 2, cfg["W"] * 2)).astype(dtype)
    return (heat,), {}


@register("image_preprocess", image_preprocess, tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    h, w = _img_shape(cfg)
    img = rng.integers(0, 256, size=(h, w, 3)).astype(dtype)
    mean = np.array([123.675, 116.28, 103.53], dtype=dtype)
    std = np.array([58.395, 57.12, 57.375], dtype=dtype)
    return (img, mean, std), {}


# Keyed by the head's dtype, its input's; the results are float32 and compared bit for bit
# (JAX's port alone gets an ulp: XLA divides by multiplying by the reciprocal, jax_heads.py).
@register("image_preprocess_u8", image_preprocess_u8, tol={"uint8": EXACT["float32"]},
          dtypes=("uint8",))
def _(cfg, rng, dtype):
    side = _letterbox_side(cfg)
    shape = (side, side, 3) if cfg["B"] == 1 else (cfg["B"], side, side, 3)  # one image or a batch
    img = rng.integers(0, 256, size=shape, dtype=np.uint8)  # whatever dtype is asked
    mean = np.array([123.675, 116.28, 103.53], dtype=np.float32)
    std = np.array([58.395, 57.12, 57.375], dtype=np.float32)
    return (img, mean, std), {}


# NMS loops --------------------------------------------------------------------------------

def _nms_candidates(cfg):
    """Boxes in front of an NMS: the 1,000 RoIs of one image, and at the batch size Faster R-CNN's
    pre-NMS top 6,000 (all B * R rows when fewer: 12 at tiny, 128 at small)."""
    return min(6000, cfg["B"] * cfg["R"])


def _clustered_boxes(rng, n, img_shape, dtype):
    """``n`` xyxy boxes as a detector proposes them: about n / 8 objects, each covered by the
    boxes whose corners scatter around its own by a tenth of its size (so that NMS keeps about
    a fifth of them), on whole pixels (so that torchvision's x2 - x1 and py_cpu_nms's
    x2 - x1 + 1 conventions give the same IoU bits), and the object each box belongs to."""
    h, w = img_shape
    objects = _rand_boxes(rng, (max(3, n // 8),), img_shape, np.float64, min_size=8.0, max_frac=0.3)
    owner = rng.integers(0, objects.shape[0], size=n)
    size = objects[owner, 2:] - objects[owner, :2]
    boxes = np.round(objects[owner] + rng.normal(0.0, 0.1, size=(n, 4)) * np.tile(size, 2))
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, w - 1)
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, h - 1)
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)  # at least a pixel wide and high
    return boxes.astype(dtype), owner


@register("py_cpu_nms", py_cpu_nms)
def _(cfg, rng, dtype):
    n = _nms_candidates(cfg)
    boxes, _ = _clustered_boxes(rng, n, _img_shape(cfg), dtype)
    dets = np.concatenate([boxes, _distinct_scores(rng, n, dtype)[:, None]], axis=1)
    return (dets,), dict(thresh=0.5)  # 0.5: the same threshold in float32 and float64


@register("hard_nms", hard_nms, static_argnames=("top_k", "candidate_size"))
def _(cfg, rng, dtype):
    n = _nms_candidates(cfg)
    h, w = _img_shape(cfg)
    boxes, _ = _clustered_boxes(rng, n, (h, w), np.float64)
    boxes = (boxes / np.array([w, h, w, h])).astype(dtype)  # corners relative to the image
    box_scores = np.concatenate([boxes, _distinct_scores(rng, n, dtype, 0.3, 1.0)[:, None]], axis=1)
    # one image: the predictors' defaults; the batch size: a wider window stopped at top_k
    top_k, candidate_size = (-1, 200) if cfg["B"] == 1 else (n // 40, n // 5)
    return (box_scores,), dict(iou_threshold=0.45, top_k=top_k, candidate_size=candidate_size)


@register("greedy_nms_class_tagged", greedy_nms_class_tagged)
def _(cfg, rng, dtype):
    n = _nms_candidates(cfg)
    boxes, owner = _clustered_boxes(rng, n, _img_shape(cfg), dtype)
    labels = rng.integers(0, cfg["C"], size=owner.max() + 1)[owner]  # one class per object
    wrong = rng.random(n) < 0.1  # a tenth of the boxes name another class than their object's
    labels[wrong] = rng.integers(0, cfg["C"], size=int(wrong.sum()))
    dets = np.concatenate([boxes, _distinct_scores(rng, n, dtype)[:, None],
                           labels[:, None].astype(dtype)], axis=1)
    return (dets,), dict(thresh=0.5)


def _yolox_scores(cfg, rng, n, owner, dtype):
    """(n, C) class scores: each box scores its object's class in [0.02, 1), and for one box in
    five a second class as well; every other score is under 0.1 (YOLOX's demo threshold).  The
    scores above 0.1 are distinct, so each class's NMS order is unique."""
    C = cfg["C"]
    scores = _distinct_scores(rng, n * C, dtype, 0.0, 0.1).reshape(n, C)
    hits = _distinct_scores(rng, 2 * n, dtype, 0.02, 1.0)
    cls = rng.integers(0, C, size=owner.max() + 1)[owner]
    scores[np.arange(n), cls] = hits[:n]
    second = rng.random(n) < 0.2
    scores[np.flatnonzero(second), (cls[second] + 1) % C] = hits[n:][second]
    return scores


@register("multiclass_nms", multiclass_nms, static_argnames=("class_agnostic",))
def _(cfg, rng, dtype):
    n = _nms_candidates(cfg)
    boxes, owner = _clustered_boxes(rng, n, _img_shape(cfg), dtype)
    boxes += rng.uniform(0, 1, size=boxes.shape).astype(dtype)  # decoded boxes: not whole pixels
    scores = _yolox_scores(cfg, rng, n, owner, dtype)
    return (boxes, scores), dict(score_thr=0.1, nms_thr=0.45, class_agnostic=False)


@register("multiclass_nms_agnostic", multiclass_nms, static_argnames=("class_agnostic",))
def _(cfg, rng, dtype):
    args, kwargs = HEADS["multiclass_nms"].make_inputs(cfg, rng, dtype)
    return args, dict(kwargs, class_agnostic=True)


def _soft_nms_inputs(cfg, rng, dtype, method):
    n = _nms_candidates(cfg)
    boxes, _ = _clustered_boxes(rng, n, _img_shape(cfg), dtype)
    dets = np.concatenate([boxes, _distinct_scores(rng, n, dtype)[:, None]], axis=1)
    # Nt = 0.5 rather than the paper's 0.3: the same threshold in float32 and float64
    return (dets,), dict(sigma=0.5, Nt=0.5, threshold=0.001, method=method)


# soft_nms writes the rows of its argument (run.py and the tests give every call fresh copies)
@register("soft_nms_linear_", soft_nms, static_argnames=("method",))
def _(cfg, rng, dtype):
    return _soft_nms_inputs(cfg, rng, dtype, method=1)


@register("soft_nms_gaussian_", soft_nms, static_argnames=("method",), tol=TRANSCENDENTAL)
def _(cfg, rng, dtype):
    return _soft_nms_inputs(cfg, rng, dtype, method=2)


@register("soft_nms_hard_", soft_nms, static_argnames=("method",))
def _(cfg, rng, dtype):
    return _soft_nms_inputs(cfg, rng, dtype, method=0)


# The heads above: Python loops over traced values, with no jax.numpy port (JAX needs static
# shapes and structured control flow); strider compiles them once issue 17 lands.
NMS_HEADS = ("py_cpu_nms", "hard_nms", "greedy_nms_class_tagged", "multiclass_nms",
             "multiclass_nms_agnostic", "soft_nms_linear_", "soft_nms_gaussian_", "soft_nms_hard_")


def run_numpy(head, args, kwargs):
    """Run a head in plain NumPy (for benchmarks and quick checks)."""
    with np.errstate(all="ignore"):
        return head.fn(*args, **kwargs)
