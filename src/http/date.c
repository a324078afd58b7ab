/*
 * date.c: HTTP dates, both ways.
 *
 * Out: each loop keeps the Date header and the access log's dates (the
 * combined format's and RFC 3339's) of the current second, formatted once
 * a second from libevent's cached time,
 * and a one-entry cache of the last Last-Modified it wrote (pages of one
 * load share their mtime). In: the three HTTP-date forms of RFC 9110
 * (IMF-fixdate, RFC 850, asctime) in If-Modified-Since and If-Range.
 *
 * Both by hand: strftime() and strptime() follow the locale for day and
 * month names, and timegm() is not POSIX; days_from_civil() does its job.
 */
#include "http/http.h"
#include "http/http-int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <event2/event.h>

static void put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10 % 10);
	p[1] = (char)('0' + v % 10);
}

static const char wdays[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
static void fmt_http_date(time_t t, char out[HTTP_DATE_SIZE])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
		memcpy(out, "Thu, 01 Jan 1970 00:00:00 GMT", HTTP_DATE_SIZE);
		return;
	}
	memcpy(out, wdays[tm.tm_wday], 3);
	out[3] = ',';
	out[4] = ' ';
	put2(out + 5, tm.tm_mday);
	out[7] = ' ';
	memcpy(out + 8, months[tm.tm_mon], 3);
	out[11] = ' ';
	put2(out + 12, (tm.tm_year + 1900) / 100);
	put2(out + 14, (tm.tm_year + 1900) % 100);
	out[16] = ' ';
	put2(out + 17, tm.tm_hour);
	out[19] = ':';
	put2(out + 20, tm.tm_min);
	out[22] = ':';
	put2(out + 23, tm.tm_sec);
	memcpy(out + 25, " GMT", 5);
}

static int month_index(const char *s)
{
	int i;

	for (i = 0; i < 12; i++)
		if (strncasecmp(s, months[i], 3) == 0)
			return i + 1;
	return 0;
}

static int digits(const char **p, int min, int max, int *out)
{
	int n = 0, v = 0;

	while (n < max && **p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	if (n < min)
		return -1;
	*out = v;
	return 0;
}

static int hms(const char **p, int *h, int *m, int *s)
{
	if (digits(p, 2, 2, h) < 0 || *(*p)++ != ':' || digits(p, 2, 2, m) < 0 ||
	    *(*p)++ != ':' || digits(p, 2, 2, s) < 0)
		return -1;
	return *h < 24 && *m < 60 && *s < 61 ? 0 : -1;
}

/*
 * Parses the three HTTP-date forms (IMF-fixdate, RFC 850, asctime).
 * Returns 0 or -1; an invalid date is ignored by the callers, as RFC 9110
 * asks.
 */
int http_parse_http_date(const char *s, time_t *out)
{
	int day, mon, year, h, m, sec;

	while (*s == ' ')
		s++;
	while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))
		s++;
	if (*s == ',')
		s++;
	while (*s == ' ')
		s++;
	if (*s >= '0' && *s <= '9') {
		/* "06 Nov 1994 08:49:37 GMT" or "06-Nov-94 08:49:37 GMT" */
		if (digits(&s, 1, 2, &day) < 0 || (*s != ' ' && *s != '-'))
			return -1;
		s++;
		if (!(mon = month_index(s)))
			return -1;
		s += 3;
		if (*s != ' ' && *s != '-')
			return -1;
		s++;
		if (digits(&s, 2, 4, &year) < 0 || *s++ != ' ' || hms(&s, &h, &m, &sec) < 0)
			return -1;
		if (year < 100)
			year += year < 70 ? 2000 : 1900;
	} else {
		/* asctime: "Nov  6 08:49:37 1994" */
		if (!(mon = month_index(s)))
			return -1;
		s += 3;
		while (*s == ' ')
			s++;
		if (digits(&s, 1, 2, &day) < 0 || *s++ != ' ' || hms(&s, &h, &m, &sec) < 0 ||
		    *s++ != ' ' || digits(&s, 4, 4, &year) < 0)
			return -1;
	}
	if (day < 1 || day > 31)
		return -1;
	*out = (time_t)(days_from_civil(year, mon, day) * 86400 + h * 3600 + m * 60 + sec);
	return 0;
}

/* Refreshes the per-loop Date strings once a second. */
void http_refresh_dates(struct worker *w)
{
	struct timeval tv;
	struct tm tm;

	if (event_base_gettimeofday_cached(w->base, &tv) < 0)
		gettimeofday(&tv, NULL);
	w->date_usec = (long)tv.tv_usec;
	if (tv.tv_sec == w->date_sec)
		return;
	w->date_sec = tv.tv_sec;
	fmt_http_date(tv.tv_sec, w->date);
	if (gmtime_r(&w->date_sec, &tm) && tm.tm_year + 1900 <= 9999 && tm.tm_year >= -1900) {
		snprintf(w->clf_date, sizeof(w->clf_date), "%02d/%s/%04d:%02d:%02d:%02d +0000",
			 tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
			 tm.tm_sec);
		memcpy(w->iso_date, "0000-00-00T00:00:00", 20);
		put2(w->iso_date, (tm.tm_year + 1900) / 100);
		put2(w->iso_date + 2, (tm.tm_year + 1900) % 100);
		put2(w->iso_date + 5, tm.tm_mon + 1);
		put2(w->iso_date + 8, tm.tm_mday);
		put2(w->iso_date + 11, tm.tm_hour);
		put2(w->iso_date + 14, tm.tm_min);
		put2(w->iso_date + 17, tm.tm_sec);
	}
}

const char *http_last_modified(struct worker *w, time_t t)
{
	if (t != w->lm_sec || !w->lm[0]) {
		fmt_http_date(t, w->lm);
		w->lm_sec = t;
	}
	return w->lm;
}
