/* seek_fit.c - the seek curve's coefficients from the datasheet points:
 * what the model (dm_init) and the parameter check (dm_params_check) share,
 * in a file of its own so that neither of them calls the other back. */
#include "model.h"

#include <math.h>

/* Seek curve a + b sqrt(x) + c x through three datasheet points: one
 * cylinder (track-to-track), the full stroke, and the average over all
 * seeks between uniform random positions (the datasheets' "weighted average
 * of all seek combinations"): distances then have density 2(1 - x), over
 * which E[sqrt x] = 8/15 and E[x] = 1/3. 0 on success, -1 if singular. */
int dm_seek_fit(const struct dm_params *p, double *a, double *b, double *c)
{
    double x1 = 1.0 / p->cylinders;
    double m[3][4] = {
        {1, sqrt(x1), x1, p->seek_track_ms * 1000},
        {1, 1, 1, p->seek_full_ms * 1000},
        {1, 8.0 / 15.0, 1.0 / 3.0, p->seek_avg_ms * 1000},
    };
    for (int col = 0; col < 3; col++) { /* Gauss-Jordan with partial pivoting */
        int piv = col;
        for (int r = col + 1; r < 3; r++)
            if (fabs(m[r][col]) > fabs(m[piv][col]))
                piv = r;
        if (fabs(m[piv][col]) < 1e-12)
            return -1;
        for (int k = 0; k < 4; k++) {
            double t = m[col][k];
            m[col][k] = m[piv][k];
            m[piv][k] = t;
        }
        for (int r = 0; r < 3; r++) {
            if (r == col)
                continue;
            double f = m[r][col] / m[col][col];
            for (int k = 0; k < 4; k++)
                m[r][k] -= f * m[col][k];
        }
    }
    *a = m[0][3] / m[0][0];
    *b = m[1][3] / m[1][1];
    *c = m[2][3] / m[2][2];
    return 0;
}
