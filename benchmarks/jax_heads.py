"""jax.numpy ports of the detection heads in heads.py, for the JAX column of run.py.

JAX arrays are immutable, so every in-place write of the NumPy source (``x[:, 0::4] = ...``,
``y[..., 0:2] *= s``, ``np.clip(v, lo, hi, out=v)``) becomes a functional update
(``x.at[...].set``, a stack, a concatenate).  Each port returns the values the NumPy head
leaves behind: its return value, or, for heads that only write into an argument and return
None (``cxcywh2xyxy_``, ``bbox_mapping_back_``), the updated argument.  run.py compares those
returned values with NumPy's; writes into the caller's arrays are not part of JAX's model and
are not checked.  JAX needs static shapes, so a head whose results have a run-time length
(``x[keep]`` and what follows) is ported at the length of what the mask selects from (or the
static top-k): the rows the mask leaves out sort last and come back as fill (0; -1 for labels),
and the port's ``expected`` pads NumPy's results to that length with the same fill.

``PORTS`` maps a head name (as in ``heads.HEADS``) to a :class:`Port`: the function, the
arguments ``jax.jit`` must treat as static (everything that decides a shape or a Python
branch) and ``expected(result, args, kwargs)``, which picks from NumPy's call what the port
returns, and ``tol``, a tolerance in place of the head's where XLA's rewrites change the bits
(only ``image_preprocess_u8``'s).  jax is imported lazily by :func:`ports`, so importing this
module needs no JAX.
"""
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Port:
    fn: object
    static_argnames: tuple = ()
    # NumPy's (result, args after the call, kwargs after the call) -> what the port returns
    expected: object = None
    # {dtype: (rtol, atol)} in place of the head's, where XLA's own rewrites keep the port from
    # NumPy's bits (say which rewrite at the port)
    tol: dict = None


def _result(result, args, kwargs):
    return result


def _first_argument(result, args, kwargs):
    return args[0]


def _pad(x, rows, fill=0):
    """NumPy's run-time-length result ``x`` padded along axis 0 to the port's static ``rows``."""
    pad = np.full((rows - x.shape[0],) + x.shape[1:], fill, dtype=x.dtype)
    return np.concatenate([x, pad])


def _padded_topk(result, args, kwargs):
    boxes, scores, labels = result
    k = kwargs["k"]
    return _pad(boxes, k), _pad(scores, k), _pad(labels, k, -1)


def _padded_per_image(result, args, kwargs):
    rows = min(kwargs["max_nms"], args[0].shape[1])
    return [_pad(x, rows) for x in result]


def _padded_to_inputs(result, args, kwargs):
    boxes, scores, labels = result
    n = args[1].shape[0]
    return _pad(boxes, n), _pad(scores, n), _pad(labels, n, -1)


def _written_arrays(result, args, kwargs):
    boxes, offsets, scores, labels = args
    return boxes, scores, labels


def ports():
    """Builds the ports (imports jax.numpy); returns {head name: Port}."""
    import jax.numpy as jnp
    from jax import lax

    def sigmoid(x):
        return 1 / (1 + jnp.exp(-x))

    # ---------------------------------------------------------------- anchors / priors
    def base_anchors(scales, ratios, base_size, center_offset=0.0):
        w = base_size
        h = base_size
        x_center = center_offset * w
        y_center = center_offset * h
        h_ratios = jnp.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws = (w * w_ratios[:, None] * scales[None, :]).reshape(-1)
        hs = (h * h_ratios[:, None] * scales[None, :]).reshape(-1)
        return jnp.stack([x_center - 0.5 * ws, y_center - 0.5 * hs,
                          x_center + 0.5 * ws, y_center + 0.5 * hs], axis=-1)

    def _whctrs(anchor):
        w = anchor[2] - anchor[0] + 1
        h = anchor[3] - anchor[1] + 1
        return w, h, anchor[0] + 0.5 * (w - 1), anchor[1] + 0.5 * (h - 1)

    def _mkanchors(ws, hs, x_ctr, y_ctr):
        ws = ws[:, None]
        hs = hs[:, None]
        return jnp.hstack((x_ctr - 0.5 * (ws - 1), y_ctr - 0.5 * (hs - 1),
                           x_ctr + 0.5 * (ws - 1), y_ctr + 0.5 * (hs - 1)))

    def generate_anchors(base_anchor, ratios, scales):
        w, h, x_ctr, y_ctr = _whctrs(base_anchor)
        size_ratios = w * h / ratios
        ws = jnp.round(jnp.sqrt(size_ratios))
        hs = jnp.round(ws * ratios)
        ratio_anchors = _mkanchors(ws, hs, x_ctr, y_ctr)
        out = []
        for i in range(ratio_anchors.shape[0]):
            w, h, x_ctr, y_ctr = _whctrs(ratio_anchors[i, :])
            out.append(_mkanchors(w * scales, h * scales, x_ctr, y_ctr))
        return jnp.vstack(out)

    def grid_anchors(base_anchors, featmap_size, stride):
        feat_h, feat_w = featmap_size
        shift_x = jnp.arange(0, feat_w).astype(base_anchors.dtype) * stride
        shift_y = jnp.arange(0, feat_h).astype(base_anchors.dtype) * stride
        xx, yy = jnp.meshgrid(shift_x, shift_y)
        xx, yy = xx.ravel(), yy.ravel()
        shifts = jnp.stack([xx, yy, xx, yy], axis=-1)
        return (base_anchors[None, :, :] + shifts[:, None, :]).reshape(-1, 4)

    def grid_points(featmap_size, stride, offset=0.5, with_stride=True, dtype=None):
        feat_h, feat_w = featmap_size
        shift_x = ((jnp.arange(0, feat_w) + offset) * stride).astype(dtype)
        shift_y = ((jnp.arange(0, feat_h) + offset) * stride).astype(dtype)
        xx, yy = jnp.meshgrid(shift_x, shift_y)
        xx, yy = xx.reshape(-1), yy.reshape(-1)
        if not with_stride:
            return jnp.stack([xx, yy], axis=-1)
        s = jnp.full((xx.shape[0],), stride, dtype=dtype)
        return jnp.stack([xx, yy, s, s], axis=-1)

    def ssd_priors(wh, feat_size, image_size, clip=True):
        fh, fw = feat_size
        cx = jnp.linspace(0.5, fw - 0.5, fw) / fw
        cy = jnp.linspace(0.5, fh - 0.5, fh) / fh
        cxx, cyy = jnp.meshgrid(cx, cy)
        k = wh.shape[0]
        centers = jnp.stack([cxx.ravel(), cyy.ravel()], axis=-1)
        centers = jnp.repeat(centers, k, axis=0).astype(wh.dtype)
        sizes = jnp.tile(wh / image_size, (fh * fw, 1))
        priors = jnp.hstack([centers, sizes])
        return jnp.clip(priors, 0, 1) if clip else priors

    def valid_flags(featmap_size, pad_shape, stride, num_base_anchors):
        feat_h, feat_w = featmap_size
        h, w = pad_shape
        valid_h = min(int(math.ceil(h / stride)), feat_h)
        valid_w = min(int(math.ceil(w / stride)), feat_w)
        valid_x = jnp.arange(feat_w) < valid_w
        valid_y = jnp.arange(feat_h) < valid_h
        xx, yy = jnp.meshgrid(valid_x, valid_y)
        valid = xx.ravel() & yy.ravel()
        return jnp.broadcast_to(valid[:, None], (valid.shape[0], num_base_anchors)).reshape(-1)

    def anchor_inside_flags(flat_anchors, valid_flags, img_shape, allowed_border=0):
        img_h, img_w = img_shape[:2]
        if allowed_border < 0:
            return valid_flags
        return (valid_flags & (flat_anchors[:, 0] >= -allowed_border)
                & (flat_anchors[:, 1] >= -allowed_border)
                & (flat_anchors[:, 2] < img_w + allowed_border)
                & (flat_anchors[:, 3] < img_h + allowed_border))

    # ---------------------------------------------------------------- box coders
    def _clip_xy(bboxes, max_shape):
        """np.clip(b[..., 0::2], 0, W, out=...) and the same for 1::2, functionally."""
        bboxes = bboxes.at[..., 0::2].set(jnp.clip(bboxes[..., 0::2], 0, max_shape[1]))
        return bboxes.at[..., 1::2].set(jnp.clip(bboxes[..., 1::2], 0, max_shape[0]))

    def delta2bbox(rois, deltas, means, stds, max_shape=None, wh_ratio_clip=16 / 1000):
        num_classes = deltas.shape[1] // 4
        denorm = deltas * jnp.tile(stds, num_classes)[None, :] + jnp.tile(means, num_classes)[None, :]
        dx, dy, dw, dh = (denorm[:, i::4] for i in range(4))
        max_ratio = abs(math.log(wh_ratio_clip))
        dw = jnp.clip(dw, -max_ratio, max_ratio)
        dh = jnp.clip(dh, -max_ratio, max_ratio)
        px = ((rois[:, 0] + rois[:, 2]) * 0.5)[:, None]
        py = ((rois[:, 1] + rois[:, 3]) * 0.5)[:, None]
        pw = (rois[:, 2] - rois[:, 0])[:, None]
        ph = (rois[:, 3] - rois[:, 1])[:, None]
        gw = pw * jnp.exp(dw)
        gh = ph * jnp.exp(dh)
        gx = px + pw * dx
        gy = py + ph * dy
        # (N, K, 4) -> (N, 4K) puts component j of class k at column 4k + j, as bboxes[:, j::4]
        bboxes = jnp.stack([gx - gw * 0.5, gy - gh * 0.5, gx + gw * 0.5, gy + gh * 0.5],
                           axis=-1).reshape(deltas.shape)
        return _clip_xy(bboxes, max_shape) if max_shape is not None else bboxes

    def delta2bbox_batched(rois, deltas, means, stds, max_shape=None, wh_ratio_clip=16 / 1000,
                           clip_border=True):
        out_shape = deltas.shape
        num_classes = deltas.shape[-1] // 4
        deltas = deltas.reshape(-1, 4)
        denorm = deltas * stds.reshape(1, -1) + means.reshape(1, -1)
        dxy, dwh = denorm[:, :2], denorm[:, 2:]
        rois_ = jnp.tile(rois.reshape(-1, 4), (1, num_classes)).reshape(-1, 4)
        pxy = (rois_[:, :2] + rois_[:, 2:]) * 0.5
        pwh = rois_[:, 2:] - rois_[:, :2]
        max_ratio = abs(math.log(wh_ratio_clip))
        dwh = jnp.clip(dwh, -max_ratio, max_ratio)
        gxy = pxy + pwh * dxy
        gwh = pwh * jnp.exp(dwh)
        bboxes = jnp.concatenate([gxy - gwh * 0.5, gxy + gwh * 0.5], axis=-1)
        if clip_border and max_shape is not None:
            bboxes = _clip_xy(bboxes, max_shape)
        return bboxes.reshape(out_shape)

    def bbox2delta(proposals, gt, means, stds):
        px = (proposals[..., 0] + proposals[..., 2]) * 0.5
        py = (proposals[..., 1] + proposals[..., 3]) * 0.5
        pw = proposals[..., 2] - proposals[..., 0]
        ph = proposals[..., 3] - proposals[..., 1]
        gx = (gt[..., 0] + gt[..., 2]) * 0.5
        gy = (gt[..., 1] + gt[..., 3]) * 0.5
        gw = gt[..., 2] - gt[..., 0]
        gh = gt[..., 3] - gt[..., 1]
        deltas = jnp.stack([(gx - px) / pw, (gy - py) / ph, jnp.log(gw / pw), jnp.log(gh / ph)],
                           axis=-1)
        return (deltas - means) / stds

    def tblr2bbox(priors, tblr, normalizer=4.0, normalize_by_wh=True, max_shape=None):
        loc = tblr * normalizer
        centers = (priors[..., 0:2] + priors[..., 2:4]) / 2
        if normalize_by_wh:
            wh = priors[..., 2:4] - priors[..., 0:2]
            loc = jnp.concatenate([wh[..., 1:2] * loc[..., :2], wh[..., 0:1] * loc[..., 2:]], axis=-1)
        top, bottom, left, right = (loc[..., i:i + 1] for i in range(4))
        bboxes = jnp.concatenate((centers[..., 0:1] - left, centers[..., 1:2] - top,
                                  centers[..., 0:1] + right, centers[..., 1:2] + bottom), axis=-1)
        return _clip_xy(bboxes, max_shape) if max_shape is not None else bboxes

    def distance2bbox(points, distance, max_shape=None):
        bboxes = jnp.stack([points[..., 0] - distance[..., 0], points[..., 1] - distance[..., 1],
                            points[..., 0] + distance[..., 2], points[..., 1] + distance[..., 3]], -1)
        return _clip_xy(bboxes, max_shape) if max_shape is not None else bboxes

    def bbox2distance(points, bbox, max_dis=None, eps=0.1):
        sides = [points[:, 0] - bbox[:, 0], points[:, 1] - bbox[:, 1],
                 bbox[:, 2] - points[:, 0], bbox[:, 3] - points[:, 1]]
        if max_dis is not None:
            sides = [jnp.clip(s, 0, max_dis - eps) for s in sides]
        return jnp.stack(sides, -1)

    def centerness_target(t):
        lr, tb = t[:, 0::2], t[:, 1::2]
        return jnp.sqrt((lr.min(axis=-1) / lr.max(axis=-1)) * (tb.min(axis=-1) / tb.max(axis=-1)))

    # ---------------------------------------------------------------- box utilities
    def clip_boxes_(boxes, img_shape):
        return _clip_xy(boxes, img_shape)

    def clip_boxes_batched(bboxes, img_shapes):
        max_xy = jnp.flip(jnp.concatenate([img_shapes, img_shapes], axis=-1), -1).astype(bboxes.dtype)
        max_xy = jnp.expand_dims(max_xy, -2)
        min_xy = jnp.zeros_like(max_xy)
        bboxes = jnp.where(bboxes < min_xy, min_xy, bboxes)
        return jnp.where(bboxes > max_xy, max_xy, bboxes)

    def bbox_area(b):
        return (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])

    def xyxy2cxcywh(b):
        x1, y1, x2, y2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return jnp.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], axis=-1)

    def cxcywh2xyxy(x):
        return jnp.stack([x[..., 0] - x[..., 2] / 2, x[..., 1] - x[..., 3] / 2,
                          x[..., 0] + x[..., 2] / 2, x[..., 1] + x[..., 3] / 2], axis=-1)

    def cxcywh2xyxy_(x):
        x = x.at[..., 0:2].add(-(x[..., 2:4] / 2))   # x[..., 0:2] -= x[..., 2:4] / 2
        return x.at[..., 2:4].add(x[..., 0:2])       # x[..., 2:4] += x[..., 0:2] (updated)

    def bbox_flip(bboxes, img_shape, direction="horizontal"):
        h, w = img_shape
        f = bboxes
        if direction in ("horizontal", "diagonal"):
            f = f.at[..., 0::4].set(w - bboxes[..., 2::4]).at[..., 2::4].set(w - bboxes[..., 0::4])
        if direction in ("vertical", "diagonal"):
            f = f.at[..., 1::4].set(h - bboxes[..., 3::4]).at[..., 3::4].set(h - bboxes[..., 1::4])
        return f

    def bbox_rescale(bboxes, scale_factor=1.0):
        cx = (bboxes[:, 0] + bboxes[:, 2]) * 0.5
        cy = (bboxes[:, 1] + bboxes[:, 3]) * 0.5
        w = (bboxes[:, 2] - bboxes[:, 0]) * scale_factor
        h = (bboxes[:, 3] - bboxes[:, 1]) * scale_factor
        return jnp.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], axis=-1)

    def bbox_mapping_back_(det_bboxes, scale_factor):
        return det_bboxes.at[:, :4].divide(scale_factor)

    def bbox_overlaps(b1, b2, mode="iou", eps=1e-6):
        area1 = bbox_area(b1)
        area2 = bbox_area(b2)
        lt = jnp.maximum(b1[..., :, None, :2], b2[..., None, :, :2])
        rb = jnp.minimum(b1[..., :, None, 2:], b2[..., None, :, 2:])
        wh = jnp.maximum(rb - lt, 0)
        overlap = wh[..., 0] * wh[..., 1]
        union = jnp.maximum(area1[..., None] + area2[..., None, :] - overlap, eps)
        ious = overlap / union
        if mode == "iou":
            return ious
        e_lt = jnp.minimum(b1[..., :, None, :2], b2[..., None, :, :2])
        e_rb = jnp.maximum(b1[..., :, None, 2:], b2[..., None, :, 2:])
        e_wh = jnp.maximum(e_rb - e_lt, 0)
        enclose = jnp.maximum(e_wh[..., 0] * e_wh[..., 1], eps)
        return ious - (enclose - union) / enclose

    def bbox_overlaps_aligned(b1, b2, eps=1e-6):
        lt = jnp.maximum(b1[..., :2], b2[..., :2])
        rb = jnp.minimum(b1[..., 2:], b2[..., 2:])
        wh = jnp.clip(rb - lt, 0, jnp.inf)
        overlap = wh[..., 0] * wh[..., 1]
        union = jnp.maximum(bbox_area(b1) + bbox_area(b2) - overlap, eps)
        return overlap / union

    # ---------------------------------------------------------------- YOLO
    def yolo_decode_(pred, anchors, stride):
        bs, na, ny, nx, no = pred.shape
        xv, yv = jnp.meshgrid(jnp.arange(nx), jnp.arange(ny))
        grid = jnp.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2).astype(pred.dtype)
        anchor_wh = anchors.reshape(1, na, 1, 1, 2)
        out = jnp.concatenate([(sigmoid(pred[..., 0:2]) + grid) * stride,
                               jnp.exp(pred[..., 2:4]) * anchor_wh,
                               sigmoid(pred[..., 4:])], axis=-1)
        return out.reshape(bs, -1, no)

    def yolov5_decode(x, anchors, stride):
        bs, na, ny, nx, no = x.shape
        yv, xv = jnp.meshgrid(jnp.arange(ny), jnp.arange(nx), indexing="ij")
        grid = jnp.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2).astype(x.dtype) - 0.5
        anchor_grid = (anchors * stride).reshape(1, na, 1, 1, 2)
        y = sigmoid(x)
        y = jnp.concatenate([(y[..., 0:2] * 2 + grid) * stride,
                             (y[..., 2:4] * 2) ** 2 * anchor_grid,
                             y[..., 4:]], axis=-1)
        return y.reshape(bs, na * nx * ny, no)

    def yolo_decode_f16_(pred, anchors, stride):
        bs, na, ny, nx, no = pred.shape
        yv, xv = jnp.meshgrid(jnp.arange(ny), jnp.arange(nx), indexing="ij")
        grid = jnp.stack((xv, yv), 2).reshape(1, 1, ny, nx, 2).astype(pred.dtype)
        anchor_grid = (anchors * stride).reshape(1, na, 1, 1, 2)  # a traced int is weak: float16
        y = sigmoid(pred)
        y = jnp.concatenate([(y[..., 0:2] * 2 - 0.5 + grid) * stride,
                             (y[..., 2:4] * 2) ** 2 * anchor_grid,
                             y[..., 4:]], axis=-1)
        return y.reshape(bs, -1, no)

    def yolo_postprocess(pred, conf_thres):
        scores = pred[..., 5:] * pred[..., 4:5]
        boxes = cxcywh2xyxy(pred[..., :4])
        conf = scores.max(axis=-1, keepdims=True)
        j = scores.argmax(axis=-1)
        keep = (conf[..., 0] > conf_thres) & (pred[..., 4] > conf_thres)
        return boxes, jnp.where(keep[..., None], conf, 0.0), j, keep

    # ---------------------------------------------------------------- scores
    def softmax(x, axis=-1):
        e = jnp.exp(x - jnp.max(x, axis=axis, keepdims=True))
        return e / jnp.sum(e, axis=axis, keepdims=True)

    def score_threshold(cls_logits, score_thr):
        scores = sigmoid(cls_logits)
        max_scores = scores.max(axis=1)
        labels = scores.argmax(axis=1)
        keep = max_scores > score_thr
        return jnp.where(keep, max_scores, 0.0), jnp.where(keep, labels, -1), keep

    def multiclass_nms_prep(multi_bboxes, multi_scores, score_thr):
        n, num_classes = multi_bboxes.shape[0], multi_scores.shape[1] - 1
        bboxes = jnp.broadcast_to(multi_bboxes[:, None], (n, num_classes, 4)).reshape(-1, 4)
        scores = multi_scores[:, :-1]
        labels = jnp.broadcast_to(jnp.arange(num_classes)[None, :], scores.shape).reshape(-1)
        scores = scores.reshape(-1)
        offsets = labels.astype(bboxes.dtype) * (bboxes.max() + 1)
        return (bboxes + offsets[:, None], jnp.where(scores > score_thr, scores, 0), labels,
                scores > score_thr)

    def retina_decode(cls_score, bbox_pred, anchors, means, stds, max_shape, score_thr):
        B = cls_score.shape[0]
        num_classes = cls_score.shape[1] * 4 // bbox_pred.shape[1]
        scores = sigmoid(cls_score.transpose(0, 2, 3, 1).reshape(B, -1, num_classes))
        deltas = bbox_pred.transpose(0, 2, 3, 1).reshape(B, -1, 4)
        rois = jnp.broadcast_to(anchors[None], deltas.shape)
        bboxes = delta2bbox_batched(rois, deltas, means, stds, max_shape=max_shape)
        max_scores = scores.max(axis=-1)
        labels = scores.argmax(axis=-1)
        return bboxes, jnp.where(max_scores > score_thr, max_scores, 0), labels

    # ---------------------------------------------------------------- masks, sorting, top-k
    # A mask's run-time length becomes the static length of what it selects from: the rows that
    # are left out sort last (-inf keys) and come back as fill (0, labels -1), which the
    # ``expected`` of these ports pads NumPy's results with.
    def score_topk(boxes, scores, labels, score_thr, k):
        keep = scores > score_thr
        # top_k puts the lower index first among equal values, as a stable argsort of -s does
        _, order = lax.top_k(jnp.where(keep, scores, -jnp.inf), k)
        ok = jnp.arange(k) < keep.sum()
        return (jnp.where(ok[:, None], boxes[order], 0), jnp.where(ok, scores[order], 0),
                jnp.where(ok, labels[order], -1))

    def yolov5_prologue(prediction, conf_thres, max_nms=300):
        bs, n = prediction.shape[:2]
        k = min(max_nms, n)
        xc = prediction[..., 4] > conf_thres
        output = []
        for xi in range(bs):
            x = prediction[xi]
            cls = x[:, 5:] * x[:, 4:5]
            conf = cls.max(1, keepdims=True)
            j = cls.argmax(1)[:, None]
            x = jnp.concatenate((cxcywh2xyxy(x[:, :4]), conf, j.astype(x.dtype)), 1)
            keep = xc[xi] & (conf[:, 0] > conf_thres)
            order = jnp.argsort(jnp.where(keep, conf[:, 0], -jnp.inf), stable=True)[::-1][:k]
            ok = jnp.arange(k) < keep.sum()
            output.append(jnp.where(ok[:, None], x[order], 0))
        return output

    def batched_nms_offsets(boxes, scores, labels, score_thr):
        valid = scores > score_thr
        max_coordinate = jnp.where(valid[:, None], boxes, -jnp.inf).max()
        offsets = labels.astype(boxes.dtype) * (max_coordinate + 1)
        boxes_for_nms = boxes + offsets[:, None]
        order = jnp.argsort(jnp.where(valid, scores, -jnp.inf), stable=True)[::-1]
        ok = jnp.arange(scores.shape[0]) < valid.sum()
        return (jnp.where(ok[:, None], boxes_for_nms[order], 0), jnp.where(ok, scores[order], 0),
                jnp.where(ok, labels[order], -1))

    def mask_writes(boxes, offsets, scores, labels, score_thr):
        scores = jnp.where(scores < score_thr, 0, scores)
        valid = scores > 0
        boxes = jnp.where(valid[:, None], boxes - offsets, 0)
        return boxes, scores, jnp.where(scores == 0, -1, labels)

    def argsort_scores(scores):
        return jnp.argsort(scores, stable=True)

    def argsort_scores_default(scores):
        return jnp.argsort(scores)

    # ---------------------------------------------------------------- TTA / preprocessing
    def centernet_flip_merge(heat):
        return (heat[0:1] + heat[1:2, :, :, ::-1]) * 0.5

    def image_preprocess(img, mean, std):
        img = (img[..., ::-1] - mean) / std
        return img.transpose(2, 0, 1)[None]

    def image_preprocess_u8(img, mean, std):
        x = (img[..., ::-1].astype(jnp.float32) - mean) / std
        return x.transpose(2, 0, 1)[None] if img.ndim == 3 else x.transpose(0, 3, 1, 2)

    return {
        "base_anchors": Port(base_anchors),
        "generate_anchors": Port(generate_anchors),
        "grid_anchors": Port(grid_anchors, ("featmap_size",)),
        "grid_points": Port(grid_points, ("featmap_size", "with_stride", "dtype")),
        "ssd_priors": Port(ssd_priors, ("feat_size", "clip")),
        "valid_flags": Port(valid_flags, ("featmap_size", "pad_shape", "stride", "num_base_anchors")),
        "anchor_inside_flags": Port(anchor_inside_flags, ("img_shape", "allowed_border")),
        "delta2bbox": Port(delta2bbox, ("max_shape", "wh_ratio_clip")),
        "delta2bbox_batched": Port(delta2bbox_batched, ("max_shape", "wh_ratio_clip", "clip_border")),
        "bbox2delta": Port(bbox2delta),
        "tblr2bbox": Port(tblr2bbox, ("normalize_by_wh", "max_shape")),
        "distance2bbox": Port(distance2bbox, ("max_shape",)),
        "distance2bbox_batched": Port(distance2bbox, ("max_shape",)),
        "bbox2distance": Port(bbox2distance, ("max_dis",)),
        "centerness_target": Port(centerness_target),
        "clip_boxes_": Port(clip_boxes_, ("img_shape",)),
        "clip_boxes_batched": Port(clip_boxes_batched),
        "bbox_area": Port(bbox_area),
        "xyxy2cxcywh": Port(xyxy2cxcywh),
        "cxcywh2xyxy": Port(cxcywh2xyxy),
        "cxcywh2xyxy_": Port(cxcywh2xyxy_, expected=_first_argument),
        "bbox_flip": Port(bbox_flip, ("img_shape", "direction")),
        "bbox_flip_diagonal": Port(bbox_flip, ("img_shape", "direction")),
        "bbox_rescale": Port(bbox_rescale),
        "bbox_mapping_back_": Port(bbox_mapping_back_, expected=_first_argument),
        "bbox_overlaps": Port(bbox_overlaps, ("mode",)),
        "giou_batched": Port(bbox_overlaps, ("mode",)),
        "bbox_overlaps_aligned": Port(bbox_overlaps_aligned),
        "yolo_decode_": Port(yolo_decode_),
        "yolo_decode_f16_": Port(yolo_decode_f16_),
        "yolov5_decode": Port(yolov5_decode),
        "yolo_postprocess": Port(yolo_postprocess),
        "softmax": Port(softmax, ("axis",)),
        "softmax_batched": Port(softmax, ("axis",)),
        "score_threshold": Port(score_threshold),
        "multiclass_nms_prep": Port(multiclass_nms_prep),
        "retina_decode": Port(retina_decode, ("max_shape",)),
        "score_topk": Port(score_topk, ("k",), expected=_padded_topk),
        # distinct scores: the k largest are the same set in the same order
        "score_topk_desc": Port(score_topk, ("k",), expected=_padded_topk),
        "yolov5_prologue": Port(yolov5_prologue, ("max_nms",), expected=_padded_per_image),
        "batched_nms_offsets": Port(batched_nms_offsets, expected=_padded_to_inputs),
        "mask_writes": Port(mask_writes, expected=_written_arrays),
        "argsort_scores": Port(argsort_scores),
        "argsort_scores_default": Port(argsort_scores_default),
        "centernet_flip_merge": Port(centernet_flip_merge),
        "image_preprocess": Port(image_preprocess),
        # XLA's algebraic simplifier rewrites a division by a broadcast (``/ std``) into a
        # multiplication by the reciprocal: 1 ulp off NumPy's quotient on 214 of the 768
        # (value, channel) pairs a uint8 image holds (all checked), never more
        "image_preprocess_u8": Port(image_preprocess_u8, tol={"uint8": (2.0**-23, 0.0)}),
    }


def expected_of(port, result, args, kwargs):
    """What a port returns, taken from NumPy's call (its result or an updated argument)."""
    return (port.expected or _result)(result, args, kwargs)
