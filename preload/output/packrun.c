/* Filling CT_REC_EVENTS records (packrun.h). */
#include <string.h>

#include "packrun.h"

void ct_packrun_close(struct ct_packrun *run, unsigned char *buf, size_t *len)
{
	if (!run->open)
		return;
	run->open = 0;
	size_t bytes = *len - run->at - sizeof(struct ct_rec_events);
	uint32_t total = CT_REC_ALIGN((uint32_t)(sizeof(struct ct_rec_events) + bytes));
	struct ct_rec_events h = {{CT_REC_EVENTS, 0, total}, run->prev.tid, run->count,
				  (uint32_t)bytes, 0};
	memset(buf + *len, 0, run->at + total - *len);
	memcpy(buf + run->at, &h, sizeof h);
	*len = run->at + total;
}

void ct_packrun_put(struct ct_packrun *run, unsigned char *buf, size_t *len,
		    const struct ct_rec_event *ev, uint32_t py)
{
	if (run->open && ev->tid != run->prev.tid)
		ct_packrun_close(run, buf, len);
	if (!run->open) {
		run->open = 1;
		run->at = *len;
		run->count = 0;
		run->prev_py = 0;
		ct_pk_base(&run->prev, ev->tid);
		*len += sizeof(struct ct_rec_events);
	}
	unsigned char *o = buf + *len;
	*len += (size_t)(ct_pk_event(o, &run->prev, run->prev_py, ev, py, 0, 0) - o);
	run->prev = *ev;
	run->prev_py = py;
	run->count++;
}

int ct_packrun_fits(const struct ct_rec *r, uint32_t *py)
{
	struct {
		struct ct_rec_event ev;
		struct ct_rec_event_py py;
	} e;
	int flag = (r->flags & CT_EVENT_F_PYSTACK) != 0;
	if (r->type != CT_REC_EVENT || r->size != (flag ? sizeof e : sizeof e.ev))
		return 0;
	*py = 0;
	if (flag) {
		memcpy(&e, r, sizeof e);
		if (e.py.reserved)
			return 0;
		*py = e.py.pystack_id;
	}
	return 1;
}
